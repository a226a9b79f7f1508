/**
 * Setup of the /v1/messages tests: the fake OpenAI upstream, reelay on a fresh Postgres database
 * serving pass-through chat models from it (one with aliases, as agents hard-code model names; one
 * whose single deployment takes one request at a time, for 529), the request log captured, and a
 * funded client per test (the official Anthropic SDK, unchanged but for base URL and key).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import Anthropic from "@anthropic-ai/sdk";
import { createLogger } from "../../src/logger.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { PRICING } from "./chat-server.ts";

export { cost, eventually, PRICING } from "./chat-server.ts";
/** the models' maxOutputTokens: a larger max_tokens is clamped to it */
export const MAX_OUTPUT = 64;
/** what Claude Code asks for by default, served by chat-a */
export const ALIASES = ["claude-sonnet-test", "claude-haiku-test"];

export interface MessagesClient {
  anthropic: Anthropic;
  key: string;
  accountId: string;
  get(path: string): Promise<any>;
  /** the newest usage row */
  lastUsage(): Promise<any>;
}

export interface MessagesServer {
  fake: FakeOpenAI;
  s: TestServer;
  /** request log lines (and every other log line) as written */
  logLines: Array<Record<string, any>>;
  newClient(credits?: number, opts?: { limits?: Record<string, number>; scopes?: string[]; models?: string[] }): Promise<MessagesClient>;
  ledger(accountId: string): Promise<Array<{ kind: string; amount: number; reason: string }>>;
  close(): Promise<void>;
}

export async function startMessagesServer(env: Record<string, string> = {}): Promise<MessagesServer> {
  const fake = await startFakeOpenAI();
  const dir = mkdtempSync(join(tmpdir(), "reelay-messages-"));
  const file = join(dir, "models.json");
  const timeouts = { connectMs: 2_000, firstByteMs: 2_000, idleMs: 2_000, totalMs: 20_000 };
  writeFileSync(file, JSON.stringify({
    builtins: false,
    models: [
      { id: "chat-a", plugin: "openai-compatible", options: { baseUrl: fake.url, upstreamModel: "up-a", timeouts }, pricing: PRICING, maxOutputTokens: MAX_OUTPUT, aliases: ALIASES },
      { id: "chat-b", plugin: "openai-compatible", options: { baseUrl: fake.url, timeouts }, pricing: PRICING, maxOutputTokens: MAX_OUTPUT },
      { id: "chat-one-at-a-time", plugin: "openai-compatible", options: { deployments: [{ name: "only", baseUrl: fake.url, maxConcurrent: 1 }], timeouts }, pricing: PRICING, maxOutputTokens: MAX_OUTPUT },
    ],
  }));
  const logLines: Array<Record<string, any>> = [];
  const capture = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split("\n")) if (l) logLines.push(JSON.parse(l));
      done();
    },
  });
  const s = await startTestServer({ REELAY_MODELS_FILE: file, ...env }, { logger: createLogger({ logLevel: "info", logPretty: false }, capture) });
  return {
    fake,
    s,
    logLines,
    async newClient(credits = 10_000_000, opts = {}) {
      const { key, accountId } = await s.newClient({ credits, limits: opts.limits, scopes: opts.scopes, models: opts.models });
      const get = async (path: string) => (await fetch(s.url + path, { headers: { authorization: `Bearer ${key}` } })).json();
      return { anthropic: new Anthropic({ apiKey: key, baseURL: s.url, maxRetries: 0 }), key, accountId, get, lastUsage: async () => (await get("/v1/usage")).data[0] };
    },
    async ledger(accountId) {
      const res = (await (await s.admin(`/admin/accounts/${accountId}/ledger?limit=500`)).json()) as { data: any[] };
      return res.data.reverse().map((r) => ({ kind: r.kind, amount: Number(r.amount), reason: String(r.reason ?? "") }));
    },
    async close() {
      await s.close();
      await fake.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
