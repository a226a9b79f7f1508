/**
 * Prompt-cache prices for an OpenAI-compatible upstream, as a client sees them: the upstream
 * reports `prompt_tokens_details.cached_tokens`; reelay bills those tokens at the model's
 * `cachedInputPerMillion` (the input price for a model without it), records them on the usage row,
 * and says so in the usage it returns. Real server, real Postgres, the official OpenAI SDK, the fake
 * OpenAI upstream; non-streamed, streamed, through /v1/responses, and an upstream whose cache count
 * is absurd.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { fakePromptTokens, startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";

/** $3 input, $15 output, $0.30 per million cached input tokens */
const CACHE_PRICED = { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000, cachedInputPerMillion: 300_000 };
const PLAIN = { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 };
/** the exact micro-dollars: every part at its price per million, rounded up once */
const price = (p: { inputPerMillion: number; outputPerMillion: number; cachedInputPerMillion?: number }, prompt: number, cached: number, completion: number) =>
  Math.ceil(((prompt - cached) * p.inputPerMillion + cached * (p.cachedInputPerMillion ?? p.inputPerMillion) + completion * p.outputPerMillion) / 1_000_000);

const messages = [{ role: "system" as const, content: "You are a careful assistant with a long system prompt." }, { role: "user" as const, content: "Count for me." }];
const PROMPT = fakePromptTokens(messages);

let fake: FakeOpenAI;
let s: TestServer;
let openai: OpenAI;
let key: string;
const dir = mkdtempSync(join(tmpdir(), "reelay-cached-"));

beforeAll(async () => {
  fake = await startFakeOpenAI();
  const file = join(dir, "models.json");
  const model = (id: string, pricing: object) => ({ id, plugin: "openai-compatible", options: { baseUrl: fake.url, timeouts: { totalMs: 10_000 } }, pricing, maxOutputTokens: 8 });
  writeFileSync(file, JSON.stringify({ builtins: false, models: [model("cache-priced", CACHE_PRICED), model("plain", PLAIN)] }));
  s = await startTestServer({ REELAY_MODELS_FILE: file });
  ({ key } = await s.newClient({ credits: 10_000_000 }));
  openai = new OpenAI({ apiKey: key, baseURL: s.url + "/v1", maxRetries: 0 });
});
afterAll(async () => {
  await s?.close();
  await fake?.stop();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => fake.reset());

const get = async (path: string) => (await fetch(s.url + path, { headers: { authorization: `Bearer ${key}` } })).json() as Promise<any>;
const balance = async () => (await get("/v1/account")).balance as number;
const lastUsage = async () => (await get("/v1/usage?limit=1")).data[0];

describe("cached prompt tokens from an OpenAI-compatible upstream", () => {
  test("GET /v1/models shows the cached-input price", async () => {
    const models = await get("/v1/models");
    const byId = Object.fromEntries(models.data.map((m: any) => [m.id, m.pricing]));
    expect(byId).toEqual({
      "cache-priced": { input_per_million: 3_000_000, output_per_million: 15_000_000, cached_input_per_million: 300_000 },
      plain: { input_per_million: 3_000_000, output_per_million: 15_000_000 },
    });
  });

  test("non-streamed: cached tokens billed at the cached price, recorded, and shown", async () => {
    const cached = PROMPT - 5;
    fake.behave({ tokens: 4, cachedTokens: cached });
    const before = await balance();
    const r = await openai.chat.completions.create({ model: "cache-priced", messages, max_tokens: 4 });
    expect(r.usage).toMatchObject({ prompt_tokens: PROMPT, completion_tokens: 4, prompt_tokens_details: { cached_tokens: cached } });
    const want = price(CACHE_PRICED, PROMPT, cached, 4);
    expect(want).toBeLessThan(price(PLAIN, PROMPT, 0, 4)); // the discount is real
    expect(before - (await balance())).toBe(want);
    expect(await lastUsage()).toMatchObject({ model: "cache-priced", prompt_tokens: PROMPT, cached_tokens: cached, cache_write_tokens: null, completion_tokens: 4, cost: want, anomaly: null });
  });

  test("streamed: billed the same way from the final usage chunk", async () => {
    const cached = PROMPT - 3;
    fake.behave({ tokens: 4, cachedTokens: cached });
    const before = await balance();
    const stream = await openai.chat.completions.create({ model: "cache-priced", messages, max_tokens: 4, stream: true, stream_options: { include_usage: true } });
    let usage: any;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
    expect(usage).toMatchObject({ prompt_tokens: PROMPT, completion_tokens: 4, prompt_tokens_details: { cached_tokens: cached } });
    const want = price(CACHE_PRICED, PROMPT, cached, 4);
    expect(before - (await balance())).toBe(want);
    expect(await lastUsage()).toMatchObject({ prompt_tokens: PROMPT, cached_tokens: cached, cost: want });
  });

  test("through /v1/responses (the chat bridge): the same price", async () => {
    const cached = 10;
    fake.behave({ tokens: 4, cachedTokens: cached });
    const before = await balance();
    const r = await openai.responses.create({ model: "cache-priced", input: "Count for me.", max_output_tokens: 4 });
    const prompt = r.usage!.input_tokens;
    expect(r.usage!.input_tokens_details.cached_tokens).toBe(cached);
    expect(before - (await balance())).toBe(price(CACHE_PRICED, prompt, cached, 4));
    expect(await lastUsage()).toMatchObject({ route: "/v1/responses", cached_tokens: cached, cost: price(CACHE_PRICED, prompt, cached, 4) });
  });

  test("a model without a cached price bills cached tokens at the input price (as before), still recording them", async () => {
    fake.behave({ tokens: 4, cachedTokens: PROMPT });
    const before = await balance();
    await openai.chat.completions.create({ model: "plain", messages, max_tokens: 4 });
    expect(before - (await balance())).toBe(price(PLAIN, PROMPT, 0, 4));
    expect(await lastUsage()).toMatchObject({ model: "plain", cached_tokens: PROMPT, cost: price(PLAIN, PROMPT, 0, 4) });
  });

  test("an upstream claiming more cached tokens than prompt tokens: billed at the input price, the anomaly recorded and the usage corrected", async () => {
    fake.behave({ tokens: 4, cachedTokens: PROMPT + 1_000 });
    const before = await balance();
    const r = await openai.chat.completions.create({ model: "cache-priced", messages, max_tokens: 4 });
    expect(r.usage).toMatchObject({ prompt_tokens: PROMPT, prompt_tokens_details: { cached_tokens: 0 } });
    expect(before - (await balance())).toBe(price(PLAIN, PROMPT, 0, 4));
    const row = await lastUsage();
    expect(row).toMatchObject({ cached_tokens: null, cost: price(PLAIN, PROMPT, 0, 4) });
    expect(row.anomaly).toMatch(/cached \+ 0 written > \d+ prompt tokens/);
  });
});
