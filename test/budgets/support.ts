/**
 * Support of the budget and plan tests: a models file with a chat model and an embeddings model on
 * the fake OpenAI upstream and a video model (the scripted test plugin), the real server started
 * in-process on Postgres or PGlite with a test clock the test moves (never sleeping to midnight),
 * and small clients for the routes.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, type Running } from "../../src/boot.ts";
import { createLogger } from "../../src/logger.ts";
import { ADMIN_TOKEN, createTestDatabase, dropDatabase, testConfig } from "../support/harness.ts";
import { pngBase64 } from "../videos/support.ts";

export const messages = [{ role: "user", content: "Say three words." }];
/** chat: 11 prompt tokens at $3/M + 8 output tokens at $15/M; the worst case is the cost (reelay's estimate = the fake's count) */
export const CHAT = { input: 3_000_000, output: 15_000_000, prompt: 11, tokens: 8 };
export const CHAT_COST = CHAT.prompt * 3 + CHAT.tokens * 15;
export const VIDEO_PER_SECOND = 30_000;
export const EMBED_PER_MILLION = 1_000_000;

/** A models file (JSON) and a plugins dir with the scripted video plugin. `extra` is merged at the top level (`plans`). */
export function budgetModels(fakeUrl: string, extra: Record<string, unknown> = {}): { env: Record<string, string>; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), "reelay-budgets-"));
  const plugins = join(dir, "plugins");
  mkdirSync(plugins);
  writeFileSync(join(plugins, "index.mjs"), `export { default } from ${JSON.stringify(join(import.meta.dir, "../plugins/scripted-video.ts"))};\n`);
  // generous timeouts: a loaded test box serving 1,000 requests at once answers slowly, and a timeout is not what these tests are about
  const timeouts = { connectMs: 60_000, firstByteMs: 60_000 };
  const chat = (id: string) => ({ id, plugin: "openai-compatible", options: { baseUrl: fakeUrl, timeouts }, pricing: { inputPerMillion: CHAT.input, outputPerMillion: CHAT.output }, maxOutputTokens: CHAT.tokens });
  writeFileSync(join(dir, "models.json"), JSON.stringify({
    builtins: false,
    models: [
      chat("chat"), chat("chat-b"),
      { id: "embed", plugin: "openai-compatible", options: { baseUrl: fakeUrl, capabilities: ["embeddings"], timeouts }, pricing: { inputPerMillion: EMBED_PER_MILLION } },
      { id: "video", plugin: "scripted-video", options: { durationMs: 0, pollIntervalMs: 20, maxConcurrency: 64 }, pricing: { perSecond: VIDEO_PER_SECOND } },
    ],
    ...extra,
  }));
  return { env: { REELAY_PLUGINS_DIR: plugins, REELAY_MODELS_FILE: join(dir, "models.json") }, dir };
}

export interface Clock {
  now(): number;
  set(iso: string | number): void;
  advance(ms: number): void;
}

export function testClock(start: string | number): Clock {
  let t = typeof start === "number" ? start : Date.parse(start);
  return { now: () => t, set: (x) => void (t = typeof x === "number" ? x : Date.parse(x)), advance: (ms) => void (t += ms) };
}

export interface BudgetServer extends Running {
  url: string;
  admin(path: string, init?: { method?: string; body?: unknown }): Promise<Response>;
  client(opts?: { credits?: number; budgets?: unknown[] }): Promise<{ accountId: string; keyId: string; key: string }>;
  close(): Promise<void>;
}

/** The real server on a random port, against a fresh Postgres database or a PGlite directory, with `clock` as the billing clock. */
export async function startBudgetServer(env: Record<string, string>, opts: { pglite?: boolean; clock?: Clock; databaseUrl?: string } = {}): Promise<BudgetServer> {
  const databaseUrl = opts.pglite ? null : (opts.databaseUrl ?? (await createTestDatabase()));
  const dataDir = mkdtempSync(join(tmpdir(), "reelay-budgets-data-"));
  const config = testConfig({ DATABASE_URL: databaseUrl ?? undefined, REELAY_DATA_DIR: dataDir, REELAY_RATE_RPM: "0", REELAY_RATE_TPM: "0", REELAY_RATE_VIDEO_CONCURRENCY: "0", ...env });
  const running = await startServer(config, { logger: createLogger(config), clock: opts.clock?.now });
  const url = running.url!.replace("0.0.0.0", "127.0.0.1");
  const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(url + path, { method: init.method ?? (init.body ? "POST" : "GET"), headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: init.body ? JSON.stringify(init.body) : undefined });
  return {
    ...running,
    url,
    admin,
    async client(o = {}) {
      const acct = (await (await admin("/admin/accounts", { body: { name: "budgets", amount: o.credits ?? 100_000_000 } })).json()) as { id: string };
      const res = await admin(`/admin/accounts/${acct.id}/keys`, { body: { name: "k", ...(o.budgets ? { budgets: o.budgets } : {}) } });
      const key = (await res.json()) as { key: string; id: string };
      if (res.status !== 201) throw new Error(`key creation failed: ${JSON.stringify(key)}`);
      return { accountId: acct.id, keyId: key.id, key: key.key };
    },
    async close() {
      await running.stop();
      if (databaseUrl && !opts.databaseUrl) await dropDatabase(databaseUrl);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const auth = (key: string) => ({ authorization: `Bearer ${key}`, "content-type": "application/json" });

export const routes = {
  chat: (url: string, key: string, model = "chat", extra: Record<string, unknown> = {}) =>
    fetch(`${url}/v1/chat/completions`, { method: "POST", headers: auth(key), body: JSON.stringify({ model, messages, max_tokens: CHAT.tokens, ...extra }) }),
  stream: (url: string, key: string, model = "chat") =>
    fetch(`${url}/v1/chat/completions`, { method: "POST", headers: auth(key), body: JSON.stringify({ model, messages, max_tokens: CHAT.tokens, stream: true, stream_options: { include_usage: true } }) }),
  responses: (url: string, key: string, model = "chat") =>
    fetch(`${url}/v1/responses`, { method: "POST", headers: auth(key), body: JSON.stringify({ model, input: "Say three words.", max_output_tokens: CHAT.tokens, store: false }) }),
  embed: (url: string, key: string, input: string | string[] = "hello budgets") =>
    fetch(`${url}/v1/embeddings`, { method: "POST", headers: auth(key), body: JSON.stringify({ model: "embed", input }) }),
  video: (url: string, key: string, seconds = 1) =>
    fetch(`${url}/v1/videos/generations`, { method: "POST", headers: auth(key), body: JSON.stringify({ model: "video", prompt: "a budget", image: pngBase64(), seconds }) }),
  account: async (url: string, key: string) => (await (await fetch(`${url}/v1/account`, { headers: auth(key) })).json()) as any,
  usage: async (url: string, key: string) => ((await (await fetch(`${url}/v1/usage?limit=500`, { headers: auth(key) })).json()) as any).data as any[],
};

/** Wait until `fn` is true (polling every 20 ms), or fail after `timeoutMs`. */
export async function until(what: string, fn: () => Promise<boolean> | boolean, timeoutMs = 15_000) {
  const t0 = performance.now();
  while (!(await fn())) {
    if (performance.now() - t0 > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await Bun.sleep(20);
  }
}
