/**
 * Bedrock models behind reelay, as clients see them: the models file of docs/providers/bedrock.md
 * booted as written (only the endpoints pointed at fake Bedrock runtimes, test/fakes/bedrock.ts,
 * which check every SigV4 signature), credentials from AWS_* environment variables, the official
 * OpenAI SDK and the Anthropic SDK as clients, real Postgres. Streamed and not, with tools and
 * images; cache reads and writes billed exactly; a throttled region skipped for its Retry-After
 * (its breaker open), then the fallback model, then 429 with the hint.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { parse } from "yaml";
import { FAKE_AWS, startFakeBedrock, type FakeBedrock } from "../../test/fakes/bedrock.ts";
import { startTestServer, type TestServer } from "../../test/support/harness.ts";

const ROOT = join(import.meta.dir, "../..");
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==";
let virginia: FakeBedrock; // claude-bedrock's endpoint and nova-lite's "virginia"
let oregon: FakeBedrock;
let models: any[];
let s: TestServer;
let openai: OpenAI;
let anthropic: Anthropic;
let key: string;
const dir = mkdtempSync(join(tmpdir(), "reelay-bedrock-"));

beforeAll(async () => {
  virginia = await startFakeBedrock();
  oregon = await startFakeBedrock();
  const page = readFileSync(join(ROOT, "docs/providers/bedrock.md"), "utf8");
  models = parse(/```yaml\n([\s\S]*?)```/.exec(page)![1]!).models;
  expect(models.map((m) => m.id)).toEqual(["claude-bedrock", "nova-lite"]);
  for (const m of models) {
    if (m.options.deployments) for (const d of m.options.deployments) d.baseUrl = d.name === "oregon" ? oregon.url : virginia.url;
    else m.options.baseUrl = virginia.url;
  }
  process.env.AWS_ACCESS_KEY_ID = FAKE_AWS.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = FAKE_AWS.secretAccessKey;
  const file = join(dir, "models.json");
  writeFileSync(file, JSON.stringify({ builtins: false, models }));
  s = await startTestServer({ REELAY_MODELS_FILE: file, REELAY_RATE_RPM: "100000", REELAY_RATE_TPM: "100000000" });
  ({ key } = await s.newClient({ credits: 100_000_000 }));
  openai = new OpenAI({ apiKey: key, baseURL: s.url + "/v1", maxRetries: 0 });
  anthropic = new Anthropic({ apiKey: key, baseURL: s.url, maxRetries: 0 });
}, 60_000);
afterAll(async () => {
  await s?.close();
  await Promise.all([virginia?.stop(), oregon?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  virginia.reset();
  oregon.reset();
});

const get = async (path: string) => (await fetch(s.url + path, { headers: { authorization: `Bearer ${key}` } })).json() as Promise<any>;
const balance = async () => (await get("/v1/account")).balance as number;
const price = (id: string) => models.find((m) => m.id === id).pricing;
/** each kind of token at its price per million, rounded up once */
const cost = (id: string, u: any) => {
  const p = price(id);
  const read = u.prompt_tokens_details?.cached_tokens ?? 0;
  const written = u.prompt_tokens_details?.cache_write_tokens ?? 0;
  return Math.ceil(((u.prompt_tokens - read - written) * p.inputPerMillion + read * (p.cachedInputPerMillion ?? p.inputPerMillion) + written * (p.cacheWritePerMillion ?? p.inputPerMillion) + u.completion_tokens * p.outputPerMillion) / 1_000_000);
};
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: "system", content: "You are terse." }, { role: "user", content: "Count for me." }];
const tools: OpenAI.ChatCompletionTool[] = [{ type: "function", function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];

describe("through the OpenAI SDK", () => {
  test("non-streamed: signed for the model's region; cache reads and writes billed exactly at their prices", async () => {
    virginia.behave({ cacheRead: 6, cacheWrite: 3 });
    const before = await balance();
    const r = await openai.chat.completions.create({ model: "claude-bedrock", messages, max_tokens: 5 });
    expect(r.choices[0]).toMatchObject({ message: { content: " one two three four five" }, finish_reason: "length" });
    expect(r.usage).toMatchObject({ completion_tokens: 5, prompt_tokens_details: { cached_tokens: 6, cache_write_tokens: 3 } });
    expect(before - (await balance())).toBe(cost("claude-bedrock", r.usage));
    expect((await get("/v1/usage?limit=1")).data[0]).toMatchObject({ model: "claude-bedrock", cached_tokens: 6, cache_write_tokens: 3, token_source: "upstream", anomaly: null });
    const sent = virginia.requests[0]!;
    expect([sent.region, sent.modelId, sent.body.system]).toEqual(["us-east-1", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", [{ text: "You are terse." }, { cachePoint: { type: "default" } }]]);
  });

  test("streamed with usage and reasoning: reasoning_content as it comes, the same exact bill", async () => {
    virginia.behave({ reasoning: "Count words.", tokens: 4, cacheRead: 2 });
    const before = await balance();
    let text = "";
    let reasoning = "";
    let usage: any;
    for await (const c of await openai.chat.completions.create({ model: "claude-bedrock", messages, max_tokens: 2000, reasoning_effort: "low", stream: true, stream_options: { include_usage: true } })) {
      text += c.choices[0]?.delta?.content ?? "";
      reasoning += (c.choices[0]?.delta as any)?.reasoning_content ?? "";
      if (c.usage) usage = c.usage;
    }
    expect([text, reasoning]).toEqual([" one two three four", "Count words."]);
    expect(virginia.requests[0]!.body.additionalModelRequestFields).toEqual({ thinking: { type: "enabled", budget_tokens: 1024 } });
    expect(usage).toMatchObject({ prompt_tokens_details: { cached_tokens: 2 } });
    expect(before - (await balance())).toBe(cost("claude-bedrock", usage));
  });

  test("a tool round trip with an image, streamed and not", async () => {
    virginia.behave({ toolUse: [{ name: "get_weather", input: { city: "Lisbon" } }], text: "21°C in Lisbon." });
    const question: OpenAI.ChatCompletionMessageParam = { role: "user", content: [{ type: "text", text: "Weather where this was taken?" }, { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } }] };
    const first = await openai.chat.completions.create({ model: "claude-bedrock", messages: [question], tools, max_tokens: 64 });
    const call = first.choices[0]!.message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect([first.choices[0]!.finish_reason, call.function.name, JSON.parse(call.function.arguments)]).toEqual(["tool_calls", "get_weather", { city: "Lisbon" }]);
    expect(virginia.requests[0]!.body.messages[0].content[1]).toEqual({ image: { format: "png", source: { bytes: PNG } } });
    const second = await openai.chat.completions.create({ model: "claude-bedrock", tools, max_tokens: 64, messages: [question, first.choices[0]!.message, { role: "tool", tool_call_id: call.id, content: "21°C" }] });
    expect(second.choices[0]!.message.content).toBe("21°C in Lisbon.");
    let args = "";
    for await (const c of await openai.chat.completions.create({ model: "claude-bedrock", messages: [question], tools, max_tokens: 64, stream: true })) args += c.choices[0]?.delta?.tool_calls?.[0]?.function?.arguments ?? "";
    expect(JSON.parse(args)).toEqual({ city: "Lisbon" });
  });
});

describe("through the Anthropic SDK (reelay's /v1/messages over the bedrock plugin)", () => {
  test("messages.create with a tool and an image; then streamed text", async () => {
    virginia.behave({ toolUse: [{ name: "get_weather", input: { city: "Oslo" } }] });
    const m = await anthropic.messages.create({
      model: "claude-bedrock", max_tokens: 64,
      tools: [{ name: "get_weather", input_schema: { type: "object", properties: { city: { type: "string" } } } }],
      messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: PNG } }, { type: "text", text: "Weather there?" }] }],
    });
    expect(m.stop_reason).toBe("tool_use");
    expect(m.content.find((b) => b.type === "tool_use")).toMatchObject({ name: "get_weather", input: { city: "Oslo" } });
    expect(virginia.requests[0]!.body.messages[0].content[0]).toEqual({ image: { format: "png", source: { bytes: PNG } } });

    virginia.behave({ tokens: 3 });
    const stream = anthropic.messages.stream({ model: "claude-bedrock", max_tokens: 16, messages: [{ role: "user", content: "Count." }] });
    let text = "";
    for await (const e of stream) if (e.type === "content_block_delta" && e.delta.type === "text_delta") text += e.delta.text;
    expect([text, (await stream.finalMessage()).usage.output_tokens]).toEqual([" one two three", 3]);
  });
});

describe("throttling and failover", () => {
  test("a throttled region is skipped for its Retry-After (breaker open); both throttled: the fallback at its prices; everything: 429 with the hint", async () => {
    virginia.behave({ exception: "ThrottlingException", retryAfter: 30 });
    const r1 = await openai.chat.completions.create({ model: "nova-lite", messages, max_tokens: 4 });
    expect(r1.model).toBe("nova-lite");
    expect(oregon.requests.map((r) => [r.region, r.modelId])).toEqual([["us-west-2", "amazon.nova-lite-v1:0"]]);
    const upstreams = (await (await s.admin("/admin/upstreams")).json()) as any;
    expect(upstreams.data.find((m: any) => m.model === "nova-lite").deployments.find((d: any) => d.name === "virginia").state).toBe("open");

    oregon.behave({ exception: "ThrottlingException", retryAfter: 30 });
    virginia.behave({});
    const before = await balance();
    const r2 = await openai.chat.completions.create({ model: "nova-lite", messages, max_tokens: 4 });
    expect(r2.model).toBe("claude-bedrock");
    expect(before - (await balance())).toBe(cost("claude-bedrock", r2.usage));

    virginia.behave({ exception: "ThrottlingException", retryAfter: 30 });
    const err = (await openai.chat.completions.create({ model: "claude-bedrock", messages, max_tokens: 4 }).then(() => null, (e) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect([err.status, err.headers?.get("retry-after")]).toEqual([429, "30"]);
  });
});
