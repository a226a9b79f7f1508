/**
 * Setup of the /v1/responses and /v1/completions tests: the fake OpenAI upstream, reelay on a fresh
 * Postgres database serving two pass-through chat models from it, and a funded client per test
 * (an OpenAI SDK client and the key, for the other official clients).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import type { Logger } from "../../src/logger.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { PRICING } from "./chat-server.ts";

export { cost, eventually, PRICING } from "./chat-server.ts";
/** the models' maxOutputTokens: a larger max_output_tokens / max_tokens is clamped to it */
export const MAX_OUTPUT = 64;

export interface BridgeClient {
  openai: OpenAI;
  key: string;
  accountId: string;
  baseURL: string;
  get(path: string): Promise<any>;
  /** the newest usage row */
  lastUsage(): Promise<any>;
}

export interface BridgeServer {
  fake: FakeOpenAI;
  s: TestServer;
  newClient(credits?: number, opts?: { limits?: Record<string, number>; scopes?: string[] }): Promise<BridgeClient>;
  ledger(accountId: string): Promise<Array<{ kind: string; amount: number }>>;
  close(): Promise<void>;
}

export async function startBridgeServer(env: Record<string, string> = {}, opts: { logger?: Logger } = {}): Promise<BridgeServer> {
  const fake = await startFakeOpenAI();
  const dir = mkdtempSync(join(tmpdir(), "reelay-bridge-"));
  const file = join(dir, "models.json");
  const timeouts = { connectMs: 2_000, firstByteMs: 2_000, idleMs: 2_000, totalMs: 20_000 };
  writeFileSync(file, JSON.stringify({
    builtins: false,
    models: [
      { id: "chat-a", plugin: "openai-compatible", options: { baseUrl: fake.url, upstreamModel: "up-a", timeouts }, pricing: PRICING, maxOutputTokens: MAX_OUTPUT },
      { id: "chat-b", plugin: "openai-compatible", options: { baseUrl: fake.url, timeouts }, pricing: PRICING, maxOutputTokens: MAX_OUTPUT },
    ],
  }));
  const s = await startTestServer({ REELAY_MODELS_FILE: file, ...env }, opts);
  return {
    fake,
    s,
    async newClient(credits = 10_000_000, opts = {}) {
      const { key, accountId } = await s.newClient({ credits, limits: opts.limits, scopes: opts.scopes });
      const baseURL = s.url + "/v1";
      const get = async (path: string) => (await fetch(s.url + path, { headers: { authorization: `Bearer ${key}` } })).json();
      return { openai: new OpenAI({ apiKey: key, baseURL, maxRetries: 0 }), key, accountId, baseURL, get, lastUsage: async () => (await get("/v1/usage")).data[0] };
    },
    async ledger(accountId) {
      const res = (await (await s.admin(`/admin/accounts/${accountId}/ledger?limit=500`)).json()) as { data: any[] };
      return res.data.reverse().map((r) => ({ kind: r.kind, amount: Number(r.amount) }));
    },
    async close() {
      await s.close();
      await fake.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
