/**
 * A server for the hardening tests: the built-in models (local embeddings, preview video) plus a
 * chat and an embeddings model on the fake OpenAI upstream, called with a secret upstream key, on
 * a fresh Postgres database. One client, funded, with every scope.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { builtinPlugins } from "../../src/registry/builtin-plugins.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { startTestServer, type TestServer } from "./harness.ts";

/** what the upstream must never let reach a client or a log */
export const UPSTREAM_SECRET = "sk-upstream-SECRET-9f8e7d6c5b4a3210";
const KEY_ENV = "REELAY_TEST_EDGE_UPSTREAM_KEY";

export interface EdgeServer {
  s: TestServer;
  fake: FakeOpenAI;
  key: string;
  accountId: string;
  close(): Promise<void>;
}

export async function startEdgeServer(env: Record<string, string> = {}, pluginOptions: Record<string, unknown> = {}): Promise<EdgeServer> {
  const fake = await startFakeOpenAI();
  process.env[KEY_ENV] = UPSTREAM_SECRET;
  const dir = mkdtempSync(join(tmpdir(), "reelay-edge-"));
  const file = join(dir, "models.json");
  const builtins = builtinPlugins.flatMap((p) => (p.models ?? []).map((d) => ({ id: d.id, plugin: p.name, ...(d.pricing ? { pricing: d.pricing } : {}) })));
  const options = { baseUrl: fake.url, apiKeyEnv: KEY_ENV, timeouts: { connectMs: 2_000, firstByteMs: 2_000, idleMs: 2_000, totalMs: 10_000 }, ...pluginOptions };
  writeFileSync(file, JSON.stringify({
    models: [
      ...builtins,
      { id: "chat-edge", plugin: "openai-compatible", options, pricing: { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 }, maxOutputTokens: 64 },
      { id: "embed-edge", plugin: "openai-compatible", options: { ...options, capabilities: ["embeddings"] }, pricing: { inputPerMillion: 1_000_000 } },
    ],
  }));
  const s = await startTestServer({ REELAY_MODELS_FILE: file, REELAY_RATE_RPM: "0", REELAY_RATE_TPM: "0", ...env });
  const { key, accountId } = await s.newClient({ credits: 50_000_000 });
  return {
    s, fake, key, accountId,
    async close() {
      await s.close();
      await fake.stop();
    },
  };
}

/** balance, held, and the number of ledger rows of an account (what a refused request must not change) */
export async function moneyOf(s: TestServer, accountId: string): Promise<{ balance: number; held: number; ledgerRows: number }> {
  const acct = (await (await s.admin(`/admin/accounts/${accountId}`)).json()) as { balance: number; held: number };
  const ledger = (await (await s.admin(`/admin/accounts/${accountId}/ledger?limit=500`)).json()) as { data: unknown[] };
  return { balance: acct.balance, held: acct.held, ledgerRows: ledger.data.length };
}
