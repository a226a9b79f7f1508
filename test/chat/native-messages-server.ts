/**
 * Setup of the native /v1/messages tests: the fake Anthropic API (two of them, as two deployments)
 * and the fake OpenAI upstream, reelay on a fresh Postgres database serving
 * - `claude-native`: the anthropic plugin on the first fake (upstream name `claude-up`), with the
 *   four prices (cache reads and writes their own) and an alias, as Claude Code asks by alias;
 * - `claude-routed`: two deployments (`first`, `second`) of `claude-routed-up`, retried over both;
 * - `claude-falls-back`: the anthropic plugin (upstream `claude-fb-up`) whose fallback is
 *   `chat-fallback`, an openai-compatible model on the OpenAI fake: the fallback goes through the bridge;
 * and a funded client per test (the official Anthropic SDK, unchanged but for base URL and key).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import Anthropic from "@anthropic-ai/sdk";
import { createLogger } from "../../src/logger.ts";
import { startFakeAnthropic, type FakeAnthropic } from "../fakes/anthropic-upstream.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";

export { eventually } from "./chat-server.ts";
export const NATIVE_MAX_OUTPUT = 64;
export const NATIVE_ALIAS = "claude-sonnet-native-test";

/** micro-dollars per million tokens: Sonnet's prices */
export const CLAUDE_PRICES = { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000, cachedInputPerMillion: 300_000, cacheWritePerMillion: 3_750_000 };
/** the bridged fallback's prices (no cache prices: cached tokens at the input price) */
export const FALLBACK_PRICES = { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000 };

export interface Tokens { input: number; cacheRead?: number; cacheWrite?: number; output: number }
/** the exact charge of a request: each kind of token at its price per million, rounded up once */
export const claudeCost = (t: Tokens, p: { inputPerMillion: number; outputPerMillion: number; cachedInputPerMillion?: number; cacheWritePerMillion?: number } = CLAUDE_PRICES) =>
  Math.ceil((t.input * p.inputPerMillion + (t.cacheRead ?? 0) * (p.cachedInputPerMillion ?? p.inputPerMillion) + (t.cacheWrite ?? 0) * (p.cacheWritePerMillion ?? p.inputPerMillion) + t.output * p.outputPerMillion) / 1_000_000);

export interface NativeClient {
  anthropic: Anthropic;
  key: string;
  accountId: string;
  get(path: string): Promise<any>;
  balance(): Promise<number>;
  /** the newest usage row */
  lastUsage(): Promise<any>;
}

export interface NativeMessagesServer {
  fake: FakeAnthropic;
  second: FakeAnthropic;
  openai: FakeOpenAI;
  s: TestServer;
  logLines: Array<Record<string, any>>;
  newClient(credits?: number): Promise<NativeClient>;
  ledger(accountId: string): Promise<Array<{ kind: string; amount: number }>>;
  reset(): void;
  close(): Promise<void>;
}

export async function startNativeMessagesServer(opts: { maxOutputTokens?: number } = {}): Promise<NativeMessagesServer> {
  const fake = await startFakeAnthropic();
  const second = await startFakeAnthropic({ apiKey: "sk-ant-second-0123456789" });
  const openai = await startFakeOpenAI();
  const dir = mkdtempSync(join(tmpdir(), "reelay-native-messages-"));
  const file = join(dir, "models.json");
  const timeouts = { connectMs: 2_000, firstByteMs: 5_000, idleMs: 5_000, totalMs: 30_000 };
  const maxOutputTokens = opts.maxOutputTokens ?? NATIVE_MAX_OUTPUT;
  process.env.NATIVE_TEST_ANTHROPIC_KEY = fake.apiKey;
  process.env.NATIVE_TEST_SECOND_KEY = second.apiKey;
  writeFileSync(file, JSON.stringify({
    builtins: false,
    models: [
      {
        id: "claude-native", plugin: "anthropic", aliases: [NATIVE_ALIAS],
        options: { baseUrl: fake.url, apiKeyEnv: "NATIVE_TEST_ANTHROPIC_KEY", upstreamModel: "claude-up", timeouts },
        pricing: CLAUDE_PRICES, maxOutputTokens,
      },
      {
        id: "claude-routed", plugin: "anthropic",
        options: {
          upstreamModel: "claude-routed-up", timeouts, routing: { maxAttempts: 2 },
          deployments: [{ name: "first", baseUrl: fake.url, apiKeyEnv: "NATIVE_TEST_ANTHROPIC_KEY" }, { name: "second", baseUrl: second.url, apiKeyEnv: "NATIVE_TEST_SECOND_KEY" }],
        },
        pricing: CLAUDE_PRICES, maxOutputTokens,
      },
      {
        id: "claude-falls-back", plugin: "anthropic", fallbacks: ["chat-fallback"],
        options: { baseUrl: fake.url, apiKeyEnv: "NATIVE_TEST_ANTHROPIC_KEY", upstreamModel: "claude-fb-up", timeouts, routing: { maxAttempts: 1 } },
        pricing: CLAUDE_PRICES, maxOutputTokens,
      },
      { id: "chat-fallback", plugin: "openai-compatible", options: { baseUrl: openai.url, upstreamModel: "up-fallback", timeouts }, pricing: FALLBACK_PRICES, maxOutputTokens },
    ],
  }));
  const logLines: Array<Record<string, any>> = [];
  const capture = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split("\n")) if (l) logLines.push(JSON.parse(l));
      done();
    },
  });
  const s = await startTestServer({ REELAY_MODELS_FILE: file, REELAY_RATE_RPM: "100000", REELAY_RATE_TPM: "100000000" }, { logger: createLogger({ logLevel: "info", logPretty: false }, capture) });
  return {
    fake, second, openai, s, logLines,
    async newClient(credits = 10_000_000) {
      const { key, accountId } = await s.newClient({ credits });
      const get = async (path: string) => (await fetch(s.url + path, { headers: { authorization: `Bearer ${key}` } })).json();
      return {
        anthropic: new Anthropic({ apiKey: key, baseURL: s.url, maxRetries: 0 }), key, accountId, get,
        balance: async () => ((await get("/v1/account")) as any).balance,
        lastUsage: async () => ((await get("/v1/usage")) as any).data[0],
      };
    },
    async ledger(accountId) {
      const res = (await (await s.admin(`/admin/accounts/${accountId}/ledger?limit=500`)).json()) as { data: any[] };
      return res.data.reverse().map((r) => ({ kind: r.kind, amount: Number(r.amount) }));
    },
    reset() {
      fake.reset();
      second.reset();
      openai.reset();
    },
    async close() {
      await s.close();
      await Promise.all([fake.stop(), second.stop(), openai.stop()]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
