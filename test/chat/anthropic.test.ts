/**
 * Claude models behind reelay's OpenAI API, as a client sees them: the models files of
 * docs/providers/anthropic.md booted as written (only the upstream URLs pointed at fake Anthropic
 * APIs), the official OpenAI SDK as the client, real Postgres. Answers streamed and not, tools,
 * thinking, every bill exact to the micro-dollar with cache reads and writes at their own prices,
 * and Anthropic's failures as the client's statuses: 429 with its Retry-After, 529 retried on the
 * other deployment and then the fallback model, a stream broken after output.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI from "openai";
import { parse } from "yaml";
import { replyText, startFakeAnthropic, type FakeAnthropic } from "../fakes/anthropic-upstream.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";

const ROOT = join(import.meta.dir, "../..");
const SONNET_UP = "claude-sonnet-4-5";
const HAIKU_UP = "claude-haiku-4-5";

interface Prices { inputPerMillion: number; outputPerMillion: number; cachedInputPerMillion: number; cacheWritePerMillion: number }
let prices: Record<string, Prices>;
/** the exact charge: each kind of token at its price per million, rounded up once */
const price = (p: Prices, u: { prompt: number; cached: number; written: number; completion: number }) =>
  Math.ceil(((u.prompt - u.cached - u.written) * p.inputPerMillion + u.cached * p.cachedInputPerMillion + u.written * p.cacheWritePerMillion + u.completion * p.outputPerMillion) / 1_000_000);

let anthropic: FakeAnthropic; // api.anthropic.com in the docs: Sonnet, and Haiku's "anthropic" deployment
let gateway: FakeAnthropic; // Haiku's "gateway" deployment
let s: TestServer;
let openai: OpenAI;
let key: string;
const dir = mkdtempSync(join(tmpdir(), "reelay-anthropic-"));

beforeAll(async () => {
  anthropic = await startFakeAnthropic();
  gateway = await startFakeAnthropic({ apiKey: "sk-ant-gateway-0123456789" });
  // the page's models files, as written; only where they point changes
  const page = readFileSync(join(ROOT, "docs/providers/anthropic.md"), "utf8");
  const models = [...page.matchAll(/```yaml\n([\s\S]*?)```/g)].flatMap((m) => (parse(m[1]!) as { models: any[] }).models);
  expect(models.map((m) => m.id)).toEqual(["claude-sonnet", "claude-haiku"]);
  for (const m of models) {
    if (m.options.deployments) for (const d of m.options.deployments) d.baseUrl = d.name === "gateway" ? gateway.url : anthropic.url;
    else m.options.baseUrl = anthropic.url;
    m.options.timeouts = { connectMs: 2_000, firstByteMs: 2_000, idleMs: 2_000, totalMs: 10_000 };
  }
  prices = Object.fromEntries(models.map((m) => [m.id, m.pricing]));
  process.env.ANTHROPIC_API_KEY = anthropic.apiKey;
  process.env.GATEWAY_ANTHROPIC_KEY = gateway.apiKey;
  const file = join(dir, "models.json");
  writeFileSync(file, JSON.stringify({ builtins: false, models }));
  s = await startTestServer({ REELAY_MODELS_FILE: file, REELAY_RATE_RPM: "100000", REELAY_RATE_TPM: "100000000" });
  ({ key } = await s.newClient({ credits: 100_000_000 }));
  openai = new OpenAI({ apiKey: key, baseURL: s.url + "/v1", maxRetries: 0 });
});
afterAll(async () => {
  await s?.close();
  await Promise.all([anthropic?.stop(), gateway?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  anthropic.reset();
  gateway.reset();
});

const get = async (path: string) => (await fetch(s.url + path, { headers: { authorization: `Bearer ${key}` } })).json() as Promise<any>;
const balance = async () => (await get("/v1/account")).balance as number;
const lastUsage = async (n = 1) => (await get(`/v1/usage?limit=${n}`)).data;
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "system", content: "You are terse." }, { role: "user", content: "Count for me." }];
/** what the usage says was used, for price() */
const used = (u: any) => ({ prompt: u.prompt_tokens, cached: u.prompt_tokens_details?.cached_tokens ?? 0, written: u.prompt_tokens_details?.cache_write_tokens ?? 0, completion: u.completion_tokens });

describe("Claude through the OpenAI SDK", () => {
  test("GET /v1/models lists both with their four prices", async () => {
    const list = await get("/v1/models");
    expect(Object.fromEntries(list.data.map((m: any) => [m.id, m.pricing]))).toEqual({
      "claude-sonnet": { input_per_million: 3_000_000, output_per_million: 15_000_000, cached_input_per_million: 300_000, cache_write_per_million: 3_750_000 },
      "claude-haiku": { input_per_million: 1_000_000, output_per_million: 5_000_000, cached_input_per_million: 100_000, cache_write_per_million: 1_250_000 },
    });
  });

  test("non-streamed: the answer, and a bill exact to the micro-dollar with cache reads and writes at their prices", async () => {
    anthropic.behave({ cacheRead: 6, cacheWrite: 3 });
    const before = await balance();
    const r = await openai.chat.completions.create({ model: "claude-sonnet", messages, max_tokens: 5 });
    expect(r.model).toBe("claude-sonnet");
    expect(r.choices[0]).toMatchObject({ message: { role: "assistant", content: replyText(5) }, finish_reason: "length" });
    expect(r.usage).toMatchObject({ completion_tokens: 5, prompt_tokens_details: { cached_tokens: 6, cache_write_tokens: 3 } });
    const cost = price(prices["claude-sonnet"]!, used(r.usage));
    expect(before - (await balance())).toBe(cost);
    const [row] = await lastUsage();
    expect(row).toMatchObject({ model: "claude-sonnet", prompt_tokens: r.usage!.prompt_tokens, cached_tokens: 6, cache_write_tokens: 3, completion_tokens: 5, cost, token_source: "upstream", anomaly: null });
    expect(anthropic.requests[0]!.body).toMatchObject({ model: SONNET_UP, system: [{ type: "text", text: "You are terse." }], max_tokens: 5 });
  });

  test("streamed: tokens as they come, usage in the last chunk, the same exact bill", async () => {
    anthropic.behave({ cacheRead: 4, cacheWrite: 0 });
    const before = await balance();
    const stream = await openai.chat.completions.create({ model: "claude-sonnet", messages, max_tokens: 6, stream: true, stream_options: { include_usage: true } });
    let text = "";
    let usage: any;
    let chunks = 0;
    for await (const c of stream) {
      text += c.choices[0]?.delta?.content ?? "";
      if (c.usage) usage = c.usage;
      chunks++;
    }
    expect(text).toBe(replyText(6));
    expect(chunks).toBeGreaterThanOrEqual(6 + 2);
    expect(usage).toMatchObject({ completion_tokens: 6, prompt_tokens_details: { cached_tokens: 4, cache_write_tokens: 0 } });
    const cost = price(prices["claude-sonnet"]!, used(usage));
    expect(before - (await balance())).toBe(cost);
    expect((await lastUsage())[0]).toMatchObject({ cached_tokens: 4, cache_write_tokens: null, delivered_tokens: 6, cost });
  });

  test("a tool round trip: tool_calls out, results back, the final answer; each turn billed", async () => {
    const tools: OpenAI.ChatCompletionTool[] = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
    anthropic.behave({ toolUse: [{ name: "get_weather", input: { city: "Paris" } }], text: "It is 18°C in Paris." });
    const before = await balance();
    const first = await openai.chat.completions.create({ model: "claude-sonnet", messages, tools, max_tokens: 64 });
    const call = first.choices[0]!.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect([first.choices[0]!.finish_reason, call.function.name, JSON.parse(call.function.arguments)]).toEqual(["tool_calls", "get_weather", { city: "Paris" }]);
    const second = await openai.chat.completions.create({
      model: "claude-sonnet", tools, max_tokens: 64,
      messages: [...messages, first.choices[0]!.message, { role: "tool", tool_call_id: call.id, content: "18°C" }],
    });
    expect(second.choices[0]!.message.content).toBe("It is 18°C in Paris.");
    expect(anthropic.requests[1]!.body.messages.at(-1)).toEqual({ role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "18°C" }] });
    const rows = await lastUsage(2);
    expect(before - (await balance())).toBe(price(prices["claude-sonnet"]!, used(first.usage)) + price(prices["claude-sonnet"]!, used(second.usage)));
    expect(rows.reduce((n: number, r: any) => n + r.cost, 0)).toBe(before - (await balance()));
  });

  test("reasoning_effort → Claude's thinking, back as reasoning_content", async () => {
    anthropic.behave({ thinking: "Count in English words.", text: " one two" });
    const r = await openai.chat.completions.create({ model: "claude-sonnet", messages, max_tokens: 2000, reasoning_effort: "low" });
    expect(anthropic.requests[0]!.body.thinking).toEqual({ type: "enabled", budget_tokens: 1024 });
    const m = r.choices[0]!.message as any;
    expect([m.content, m.reasoning_content]).toEqual([" one two", "Count in English words."]);
    expect(m.thinking_blocks[0]).toMatchObject({ type: "thinking", signature: expect.stringMatching(/^sig-/) });
  });
});

describe("Anthropic's failures, as the client sees them", () => {
  const status = async (p: Promise<unknown>) => {
    const err = (await p.then(() => null, (e) => e)) as InstanceType<typeof OpenAI.APIError>;
    return { status: err?.status, retryAfter: err?.headers?.get("retry-after") ?? null, message: err?.message };
  };

  test("400 invalid_request_error: 400 with Anthropic's message, nothing charged", async () => {
    anthropic.behave({ status: 400, errorMessage: "messages.0.content.0.text: too long" });
    const before = await balance();
    expect(await status(openai.chat.completions.create({ model: "claude-sonnet", messages, max_tokens: 4 }))).toMatchObject({ status: 400, message: expect.stringContaining("messages.0.content.0.text: too long") });
    expect(await balance()).toBe(before);
  });

  test("429 with retry-after: 429 with the upstream's Retry-After, nothing charged", async () => {
    anthropic.behave({ status: 429, retryAfter: 7 });
    const before = await balance();
    expect(await status(openai.chat.completions.create({ model: "claude-sonnet", messages, max_tokens: 4 }))).toMatchObject({ status: 429, retryAfter: "7" });
    expect(await balance()).toBe(before);
  });

  test("529 on one Haiku deployment: the other answers; on both: Sonnet (the fallback) answers at its own prices; everything overloaded: 503 with Retry-After", async () => {
    anthropic.behave({ status: 529 }, { model: HAIKU_UP });
    const r1 = await openai.chat.completions.create({ model: "claude-haiku", messages, max_tokens: 4 });
    expect(r1.model).toBe("claude-haiku");
    expect(gateway.requests.filter((r) => r.body.model === HAIKU_UP).length).toBe(1);

    gateway.behave({ status: 529 });
    let before = await balance();
    const r2 = await openai.chat.completions.create({ model: "claude-haiku", messages, max_tokens: 4 });
    expect(r2.model).toBe("claude-sonnet");
    expect(before - (await balance())).toBe(price(prices["claude-sonnet"]!, used(r2.usage)));
    expect((await lastUsage())[0]).toMatchObject({ model: "claude-sonnet", cost: price(prices["claude-sonnet"]!, used(r2.usage)) });

    anthropic.behave({ status: 529, retryAfter: 5 });
    before = await balance();
    const e = await status(openai.chat.completions.create({ model: "claude-haiku", messages, max_tokens: 4 }));
    expect(e.status).toBe(503);
    expect(Number(e.retryAfter)).toBeGreaterThan(0);
    expect(await balance()).toBe(before);
  });

  test("a stream broken after output (an overloaded error event): an SSE error event ends it, the delivered tokens are billed", async () => {
    anthropic.behave({ errorEventAfterDeltas: 3 });
    const before = await balance();
    const res = await fetch(s.url + "/v1/chat/completions", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "claude-sonnet", messages, max_tokens: 8, stream: true }) });
    expect(res.status).toBe(200);
    const body = await res.text();
    expect(body).toContain('"code":"upstream_interrupted"');
    const [row] = await lastUsage();
    expect(row).toMatchObject({ model: "claude-sonnet", delivered_tokens: 3, completion_tokens: 3 });
    expect(before - (await balance())).toBe(row.cost);
    expect(row.cost).toBe(price(prices["claude-sonnet"]!, { prompt: row.prompt_tokens, cached: 0, written: 0, completion: 3 }));
  });
});
