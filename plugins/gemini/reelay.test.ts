/**
 * Gemini models behind reelay, as clients see them: the models file of docs/providers/gemini.md
 * booted as written (only the upstream URLs pointed at fake Gemini APIs, test/fakes/gemini.ts),
 * the official OpenAI SDK and the Anthropic SDK as clients, real Postgres. Streamed and not, with
 * tools and images; cached and thinking tokens billed exactly; embeddings; a RESOURCE_EXHAUSTED
 * deployment skipped for its RetryInfo delay (its breaker open), then the fallback model, then 429
 * with that delay as Retry-After.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { parse } from "yaml";
import { startFakeGemini, type FakeGemini } from "../../test/fakes/gemini.ts";
import { startTestServer, type TestServer } from "../../test/support/harness.ts";

const ROOT = join(import.meta.dir, "../..");
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==";
let google: FakeGemini; // the default deployment and project-a
let projectB: FakeGemini;
let models: any[];
let s: TestServer;
let openai: OpenAI;
let anthropic: Anthropic;
let key: string;
const dir = mkdtempSync(join(tmpdir(), "reelay-gemini-"));

beforeAll(async () => {
  google = await startFakeGemini();
  projectB = await startFakeGemini({ apiKey: "AIza-project-b-0123456789" });
  const page = readFileSync(join(ROOT, "docs/providers/gemini.md"), "utf8");
  models = parse(/```yaml\n([\s\S]*?)```/.exec(page)![1]!).models;
  expect(models.map((m) => m.id)).toEqual(["gemini-flash", "gemini-embed", "gemini-pro"]);
  for (const m of models) {
    if (m.options.deployments) for (const d of m.options.deployments) d.baseUrl = d.name === "project-b" ? projectB.url : google.url;
    else m.options.baseUrl = google.url;
  }
  process.env.GEMINI_API_KEY = google.apiKey;
  process.env.GEMINI_KEY_A = google.apiKey;
  process.env.GEMINI_KEY_B = projectB.apiKey;
  const file = join(dir, "models.json");
  writeFileSync(file, JSON.stringify({ builtins: false, models }));
  s = await startTestServer({ REELAY_MODELS_FILE: file, REELAY_RATE_RPM: "100000", REELAY_RATE_TPM: "100000000" });
  ({ key } = await s.newClient({ credits: 100_000_000 }));
  openai = new OpenAI({ apiKey: key, baseURL: s.url + "/v1", maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: key, baseURL: s.url, maxRetries: 0 });
}, 60_000);
afterAll(async () => {
  await s?.close();
  await Promise.all([google?.stop(), projectB?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  google.reset();
  projectB.reset();
});

const get = async (path: string) => (await fetch(s.url + path, { headers: { authorization: `Bearer ${key}` } })).json() as Promise<any>;
const balance = async () => (await get("/v1/account")).balance as number;
const price = (id: string) => models.find((m) => m.id === id).pricing;
/** the exact charge: fresh prompt, cached prompt and completion tokens at their prices, rounded up once */
const cost = (id: string, u: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: { cached_tokens?: number } | null }) => {
  const p = price(id);
  const cached = u.prompt_tokens_details?.cached_tokens ?? 0;
  return Math.ceil(((u.prompt_tokens - cached) * p.inputPerMillion + cached * (p.cachedInputPerMillion ?? p.inputPerMillion) + u.completion_tokens * (p.outputPerMillion ?? 0)) / 1_000_000);
};
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "system", content: "You are terse." }, { role: "user", content: "Count for me." }];
const tools: OpenAI.ChatCompletionTool[] = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];

describe("through the OpenAI SDK", () => {
  test("non-streamed: thoughts as reasoning_content; cached and thinking tokens billed exactly", async () => {
    google.behave({ thought: "Counting in English.", cachedTokens: 5, tokens: 6 });
    const before = await balance();
    const r = await openai.chat.completions.create({ model: "gemini-flash", messages, max_tokens: 16 });
    expect(r.choices[0]).toMatchObject({ message: { content: " one two three four five six" }, finish_reason: "stop" });
    expect((r.choices[0]!.message as any).reasoning_content).toBe("Counting in English.");
    // 5 thinking tokens ("Count", "ing", " in", " English", ".") billed as output with the 6 of the answer
    expect(r.usage).toMatchObject({ completion_tokens: 6 + 5, prompt_tokens_details: { cached_tokens: 5 }, completion_tokens_details: { reasoning_tokens: 5 } });
    expect(before - (await balance())).toBe(cost("gemini-flash", r.usage!));
    const [row] = (await get("/v1/usage?limit=1")).data;
    expect(row).toMatchObject({ model: "gemini-flash", cached_tokens: 5, completion_tokens: 11, token_source: "upstream", anomaly: null });
    expect(google.requests[0]!.body.generationConfig).toEqual({ maxOutputTokens: 16, thinkingConfig: { includeThoughts: true } });
  });

  test("streamed with usage: the same exact bill", async () => {
    google.behave({ thought: "Hmm.", cachedTokens: 2, tokens: 4 });
    const before = await balance();
    let text = "";
    let reasoning = "";
    let usage: any;
    for await (const c of await openai.chat.completions.create({ model: "gemini-flash", messages, max_tokens: 16, stream: true, stream_options: { include_usage: true } })) {
      text += c.choices[0]?.delta?.content ?? "";
      reasoning += (c.choices[0]?.delta as any)?.reasoning_content ?? "";
      if (c.usage) usage = c.usage;
    }
    expect([text, reasoning]).toEqual([" one two three four", "Hmm."]);
    expect(usage).toMatchObject({ completion_tokens: 4 + 2, prompt_tokens_details: { cached_tokens: 2 } });
    expect(before - (await balance())).toBe(cost("gemini-flash", usage));
  });

  test("a tool round trip with an image, streamed and not", async () => {
    google.behave({ functionCalls: [{ name: "get_weather", args: { city: "Paris" } }], text: "18°C in Paris." });
    const question: OpenAI.ChatCompletionMessageParam = { role: "user", content: [{ type: "text", text: "Weather where this was taken?" }, { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } }] };
    const first = await openai.chat.completions.create({ model: "gemini-flash", messages: [question], tools, max_tokens: 64 });
    const call = first.choices[0]!.message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect([first.choices[0]!.finish_reason, call.function.name, JSON.parse(call.function.arguments)]).toEqual(["tool_calls", "get_weather", { city: "Paris" }]);
    expect(google.requests[0]!.body.contents[0].parts[1]).toEqual({ inlineData: { mimeType: "image/png", data: PNG } });
    const second = await openai.chat.completions.create({ model: "gemini-flash", tools, max_tokens: 64, messages: [question, first.choices[0]!.message, { role: "tool", tool_call_id: call.id, content: "18°C" }] });
    expect(second.choices[0]!.message.content).toBe("18°C in Paris.");
    // the thought signature went out with the call and came back with it
    expect(google.requests[1]!.body.contents[1].parts[0]).toEqual({ functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "sig-get_weather" });
    let args = "";
    for await (const c of await openai.chat.completions.create({ model: "gemini-flash", messages: [question], tools, max_tokens: 64, stream: true })) args += c.choices[0]?.delta?.tool_calls?.[0]?.function?.arguments ?? "";
    expect(JSON.parse(args)).toEqual({ city: "Paris" });
  });

  test("embeddings: one batchEmbedContents call, vectors in order, billed on reelay's count", async () => {
    const before = await balance();
    const r = await openai.embeddings.create({ model: "gemini-embed", input: ["a cat", "a dog", "a sun"], encoding_format: "float" });
    expect(r.data.map((d) => [d.index, d.embedding.length])).toEqual([[0, 8], [1, 8], [2, 8]]);
    expect(google.requests.map((q) => [q.path, q.body.requests.length, q.body.requests[0].taskType])).toEqual([["/v1beta/models/gemini-embedding-001:batchEmbedContents", 3, "SEMANTIC_SIMILARITY"]]);
    expect(before - (await balance())).toBe(Math.ceil(r.usage.prompt_tokens * price("gemini-embed").inputPerMillion / 1_000_000));
  });
});

describe("through the Anthropic SDK (reelay's /v1/messages over the gemini plugin)", () => {
  test("messages.create with a tool and an image; then streamed text", async () => {
    google.behave({ functionCalls: [{ name: "get_weather", args: { city: "Oslo" } }] });
    const m = await anthropic.messages.create({
      model: "gemini-flash", max_tokens: 64,
      tools: [{ name: "get_weather", input_schema: { type: "object", properties: { city: { type: "string" } } } }],
      messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: PNG } }, { type: "text", text: "Weather there?" }] }],
    });
    expect(m.stop_reason).toBe("tool_use");
    expect(m.content.find((b) => b.type === "tool_use")).toMatchObject({ name: "get_weather", input: { city: "Oslo" } });
    expect(google.requests[0]!.body.contents[0].parts[0]).toEqual({ inlineData: { mimeType: "image/png", data: PNG } });
    expect(google.requests[0]!.body.tools[0].functionDeclarations[0].name).toBe("get_weather");

    google.behave({ tokens: 3, cachedTokens: 1 });
    const before = await balance();
    const stream = anthropic.messages.stream({ model: "gemini-flash", max_tokens: 16, messages: [{ role: "user", content: "Count." }] });
    let text = "";
    for await (const e of stream) if (e.type === "content_block_delta" && e.delta.type === "text_delta") text += e.delta.text;
    const final = await stream.finalMessage();
    expect(text).toBe(" one two three");
    expect(final.usage.output_tokens).toBe(3);
    expect((await balance()) < before).toBe(true);
  });
});

describe("quota and failover", () => {
  test("RESOURCE_EXHAUSTED on project-a: project-b answers and project-a is left alone for its RetryInfo delay; both: the fallback at its prices; everything: 429 with the delay", async () => {
    google.behave({ status: 429, retryDelay: 20 });
    const r1 = await openai.chat.completions.create({ model: "gemini-pro", messages, max_tokens: 4 });
    expect(r1.model).toBe("gemini-pro");
    expect(projectB.requests.length).toBe(1);
    const upstreams = (await (await s.admin("/admin/upstreams")).json()) as any;
    const deployments = upstreams.data.find((m: any) => m.model === "gemini-pro").deployments;
    expect(deployments.find((d: any) => d.name === "project-a").state).toBe("open");

    projectB.behave({ status: 429, retryDelay: 20 });
    google.behave({});
    const before = await balance();
    const r2 = await openai.chat.completions.create({ model: "gemini-pro", messages, max_tokens: 4 });
    expect(r2.model).toBe("gemini-flash"); // project-a's breaker is open: project-b's 429, then the fallback
    expect(before - (await balance())).toBe(cost("gemini-flash", r2.usage!));

    google.behave({ status: 429, retryDelay: 20 });
    const err = (await openai.chat.completions.create({ model: "gemini-flash", messages, max_tokens: 4 }).then(() => null, (e) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect([err.status, err.headers?.get("retry-after")]).toEqual([429, "20"]);
  });
});
