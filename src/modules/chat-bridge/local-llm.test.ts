/**
 * "Every chat model": POST /v1/responses and /v1/completions over the built-in stories260k (plugin
 * local-llm: real weights, llama.cpp inside reelay), with the official clients. The same request
 * through /v1/chat/completions gives the same text and the same bill; streams, max_output_tokens,
 * a client that disconnects, and what a local model cannot do (a 400 naming the Responses field).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createOpenAI } from "@ai-sdk/openai";
import { ChatOpenAI, OpenAI as LangChainOpenAI } from "@langchain/openai";
import { generateText, streamText } from "ai";
import OpenAI from "openai";
import { startTestServer, type TestServer } from "../../../test/support/harness.ts";
import { eventually } from "../../../test/chat/chat-server.ts";

/** $3 / $15 per million tokens: a prompt token costs 3 micro-dollars, a completion token 15 */
const PRICING = { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 };
const cost = (prompt: number, completion: number) => prompt * 3 + completion * 15;
const STORY = "Once upon a time";

let s: TestServer;
const dir = mkdtempSync(join(tmpdir(), "reelay-bridge-local-"));

beforeAll(async () => {
  const file = join(dir, "models.json");
  // the built-in stories260k (embedded weights, local-llm), with prices that make every token count
  writeFileSync(file, JSON.stringify({
    builtins: false,
    models: [{ id: "stories260k", plugin: "local-llm", options: { threads: 1, contextSize: 512, parallel: 2 }, pricing: PRICING, maxOutputTokens: 256 }],
  }));
  s = await startTestServer({ REELAY_MODELS_FILE: file });
}, 60_000);
afterAll(async () => {
  await s.close();
  rmSync(dir, { recursive: true, force: true });
});

async function client(credits = 1_000_000) {
  const { key, accountId } = await s.newClient({ credits });
  const baseURL = s.url + "/v1";
  const get = async (path: string) => (await fetch(s.url + path, { headers: { authorization: `Bearer ${key}` } })).json() as Promise<any>;
  return { key, accountId, baseURL, get, openai: new OpenAI({ apiKey: key, baseURL, maxRetries: 0 }), lastUsage: async () => (await get("/v1/usage")).data[0] };
}
const settled = <T>(p: PromiseLike<T>) => new Promise<T>((resolve, reject) => p.then(resolve, reject));

describe("responses over stories260k", () => {
  test("the same text and the same bill as the chat request it becomes", async () => {
    const c = await client();
    const chat = await c.openai.chat.completions.create({ model: "stories260k", messages: [{ role: "user", content: STORY }], max_tokens: 20, temperature: 0 });
    const r = await c.openai.responses.create({ model: "stories260k", input: STORY, max_output_tokens: 20, temperature: 0 });
    expect(r.output_text).toBe(chat.choices[0]!.message.content!);
    expect(r.output_text.length).toBeGreaterThan(10);
    expect(r.usage).toMatchObject({ input_tokens: chat.usage!.prompt_tokens, output_tokens: 20, total_tokens: chat.usage!.total_tokens });
    expect([r.status, r.incomplete_details?.reason]).toEqual(["incomplete", "max_output_tokens"]);
    const rows = (await c.get("/v1/usage")).data;
    expect(rows.map((u: any) => [u.route, u.token_source, u.cost])).toEqual([
      ["/v1/responses", "local", cost(chat.usage!.prompt_tokens, 20)],
      ["/v1/chat/completions", "local", cost(chat.usage!.prompt_tokens, 20)],
    ]);
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000 - 2 * cost(chat.usage!.prompt_tokens, 20), 0]);
  });

  test("streamed with the SDK helper: the same text as non-streamed for the same seed, usage as billed", async () => {
    const c = await client();
    const whole = await c.openai.responses.create({ model: "stories260k", input: STORY, max_output_tokens: 30, ...({ seed: 7 } as {}) });
    const stream = c.openai.responses.stream({ model: "stories260k", input: STORY, max_output_tokens: 30, ...({ seed: 7 } as {}) });
    let text = "";
    for await (const e of stream) if (e.type === "response.output_text.delta") text += e.delta;
    const final = await stream.finalResponse();
    expect(text).toBe(whole.output_text);
    expect(final.output_text).toBe(whole.output_text);
    expect(final.usage).toMatchObject({ input_tokens: whole.usage!.input_tokens, output_tokens: whole.usage!.output_tokens });
    expect(await c.lastUsage()).toMatchObject({ route: "/v1/responses", completion_tokens: whole.usage!.output_tokens, cost: cost(whole.usage!.input_tokens, whole.usage!.output_tokens) });
  });

  test("a client that disconnects mid-stream stops decoding and pays prompt + the tokens delivered", async () => {
    const c = await client();
    const stream = await c.openai.responses.create({ model: "stories260k", input: STORY, max_output_tokens: 250, temperature: 0, stream: true });
    let deltas = 0;
    for await (const e of stream) if (e.type === "response.output_text.delta" && ++deltas === 5) break;
    const usage = await eventually(async () => ((await c.lastUsage())?.disconnected ? c.lastUsage() : null));
    expect(usage).toMatchObject({ route: "/v1/responses", disconnected: true, token_source: "local" });
    expect(usage.completion_tokens).toBeGreaterThanOrEqual(5);
    expect(usage.completion_tokens).toBeLessThan(250);
    expect(usage.cost).toBe(cost(usage.prompt_tokens, usage.completion_tokens));
    const acct = await c.get("/v1/account");
    expect([acct.balance, acct.held]).toEqual([1_000_000 - usage.cost, 0]);
  });

  test("what a local model cannot do is a 400 naming the Responses field, nothing charged", async () => {
    const c = await client();
    const tools = await settled(c.openai.responses.create({ model: "stories260k", input: STORY, tools: [{ type: "function", name: "f", parameters: {}, strict: false }] })).catch((e) => e);
    expect([tools.status, tools.param, tools.code]).toEqual([400, "tools", "unsupported_parameter"]);
    const json = await settled(c.openai.responses.create({ model: "stories260k", input: STORY, text: { format: { type: "json_object" } } })).catch((e) => e);
    expect([json.status, json.param]).toEqual([400, "text.format"]);
    expect(json.message).toContain("Responses field 'text.format'");
    expect((await c.get("/v1/account")).balance).toBe(1_000_000);
  });

  test("the AI SDK's openai(id) and LangChain's ChatOpenAI({ useResponsesApi: true })", async () => {
    const c = await client();
    const openai = createOpenAI({ baseURL: c.baseURL, apiKey: c.key });
    const g = await generateText({ model: openai("stories260k"), prompt: STORY, maxOutputTokens: 12, temperature: 0 });
    expect([g.finishReason, g.usage.outputTokens]).toEqual(["length", 12]);
    const st = streamText({ model: openai("stories260k"), prompt: STORY, maxOutputTokens: 12, temperature: 0 });
    let streamed = "";
    for await (const piece of st.textStream) streamed += piece;
    expect(streamed).toBe(g.text);
    const lc = await new ChatOpenAI({ model: "stories260k", useResponsesApi: true, apiKey: c.key, configuration: { baseURL: c.baseURL }, maxTokens: 12, temperature: 0, maxRetries: 0 }).invoke(STORY);
    expect(lc.text).toBe(g.text);
    const rows = (await c.get("/v1/usage")).data;
    expect(rows.map((u: any) => u.route)).toEqual(["/v1/responses", "/v1/responses", "/v1/responses"]);
  });
});

describe("legacy completions over stories260k", () => {
  test("the openai SDK and LangChain's OpenAI text model: the story continued, billed on the model's tokens", async () => {
    const c = await client();
    const chat = await c.openai.chat.completions.create({ model: "stories260k", messages: [{ role: "user", content: STORY }], max_tokens: 15, temperature: 0 });
    const r = await c.openai.completions.create({ model: "stories260k", prompt: STORY, max_tokens: 15, temperature: 0 });
    expect(r.choices[0]).toMatchObject({ text: chat.choices[0]!.message.content!, finish_reason: "length", index: 0 });
    expect(r.usage).toEqual(chat.usage!);
    const lc = await new LangChainOpenAI({ model: "stories260k", apiKey: c.key, configuration: { baseURL: c.baseURL }, maxTokens: 15, temperature: 0, maxRetries: 0 }).invoke(STORY);
    expect(lc).toBe(r.choices[0]!.text);
    const stream = await c.openai.completions.create({ model: "stories260k", prompt: STORY, max_tokens: 15, temperature: 0, stream: true });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? "";
    expect(text).toBe(r.choices[0]!.text);
    const rows = (await c.get("/v1/usage")).data;
    expect(rows.map((u: any) => [u.route, u.cost])).toEqual([
      ["/v1/completions", cost(chat.usage!.prompt_tokens, 15)],
      ["/v1/completions", cost(chat.usage!.prompt_tokens, 15)],
      ["/v1/completions", cost(chat.usage!.prompt_tokens, 15)],
      ["/v1/chat/completions", cost(chat.usage!.prompt_tokens, 15)],
    ]);
  });
});
