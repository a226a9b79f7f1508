/**
 * Shared setup of the chat route tests: the fake OpenAI upstream, a models file pointing reelay at
 * it, the real server on a fresh Postgres database, and an OpenAI SDK client per key.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { refusedUrl, startTestServer, type TestServer } from "../support/harness.ts";

/** $3 / $15 per million tokens: one prompt token costs 3 micro-dollars, one completion token 15. */
export const PRICING = { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 };
export const MAX_OUTPUT = 8;
export const cost = (prompt: number, completion: number) => prompt * 3 + completion * 15;

const TIMEOUTS = { connectMs: 2_000, firstByteMs: 400, idleMs: 2_000, totalMs: 10_000 };

export interface ChatTestServer {
  fake: FakeOpenAI;
  s: TestServer;
  /** an OpenAI SDK client for a new funded account; `get` reads the account's own endpoints */
  newClient(credits?: number, opts?: { models?: string[] }): Promise<{ openai: OpenAI; key: string; accountId: string; get(path: string): Promise<any> }>;
  ledger(accountId: string): Promise<Array<{ kind: string; amount: number; held_change: number }>>;
  close(): Promise<void>;
}

export async function startChatTestServer(): Promise<ChatTestServer> {
  const fake = await startFakeOpenAI();
  const gone = { url: await refusedUrl() }; // a port nothing listens on: connection refused
  const dir = mkdtempSync(join(tmpdir(), "reelay-chat-"));
  const file = join(dir, "models.json");
  const model = (id: string, options: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    ({ id, plugin: "openai-compatible", options: { timeouts: TIMEOUTS, ...options }, pricing: PRICING, maxOutputTokens: MAX_OUTPUT, ...extra });
  writeFileSync(file, JSON.stringify({
    builtins: false,
    models: [
      model("chat-a", { baseUrl: fake.url, upstreamModel: "up-a" }),
      model("chat-running", { baseUrl: fake.url, continuousUsageStats: true }),
      model("chat-unbounded", { baseUrl: fake.url }, { maxOutputTokens: undefined }),
      model("chat-refused", { baseUrl: gone.url }),
    ],
  }));
  const s = await startTestServer({ REELAY_MODELS_FILE: file });
  return {
    fake,
    s,
    async newClient(credits = 10_000_000, opts = {}) {
      const { key, accountId } = await s.newClient({ credits, models: opts.models });
      const openai = new OpenAI({ apiKey: key, baseURL: s.url + "/v1", maxRetries: 0 });
      const get = async (path: string) => (await fetch(s.url + path, { headers: { authorization: `Bearer ${key}` } })).json();
      return { openai, key, accountId, get };
    },
    async ledger(accountId) {
      const res = (await (await s.admin(`/admin/accounts/${accountId}/ledger?limit=500`)).json()) as { data: any[] };
      return res.data.reverse().map((r) => ({ kind: r.kind, amount: Number(r.amount), held_change: Number(r.held_change) }));
    },
    async close() {
      await s.close();
      await fake.stop();
    },
  };
}

/** Poll until `fn` returns a truthy value (for effects that follow a client disconnect). */
export async function eventually<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs = 5_000): Promise<T> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (performance.now() > until) throw new Error("condition not met in time");
    await Bun.sleep(20);
  }
}
