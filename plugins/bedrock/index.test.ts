/**
 * The bedrock plugin against the fake Bedrock runtime (test/fakes/bedrock.ts), through the real
 * AWS SDK: every request SigV4-signed for its deployment's region (the fake recomputes the
 * signature), the Converse request a chat request becomes, answers and usage with cache reads and
 * writes, ConverseStream's event-stream frames as chat chunks, tool calls, images, thinking, each
 * Bedrock exception as the client status the SDK's table gives, two deployments, and a Bedrock
 * API key instead of a signature.
 */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { checkOptions, describeFailure, isPluginError, problemWithStreamEvent, type ChatCompletionChunk, type ChatCompletionRequest, type ChatStreamEvent, type ModelInstance, type PluginError } from "@reelay/plugin-sdk";
import { testCall } from "@reelay/plugin-sdk/testing";
import { FAKE_AWS, startFakeBedrock } from "../../test/fakes/bedrock.ts";
import { hostTestContext } from "../../test/support/plugin-context.ts";
import plugin from "./index.ts";

const fake = await startFakeBedrock({ apiKey: "bedrock-api-key-0123456789" });
const other = await startFakeBedrock();
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==";
const images = createServer((_req, res) => void res.writeHead(200, { "content-type": "image/png" }).end(Buffer.from(PNG, "base64")));
await new Promise<void>((r) => images.listen(0, "127.0.0.1", r));
const imageUrl = `http://127.0.0.1:${(images.address() as AddressInfo).port}/cat.png`;
afterAll(() => Promise.all([fake.stop(), other.stop(), new Promise((r) => images.close(r))]));
beforeEach(() => {
  fake.reset();
  other.reset();
});

const ENV = { AWS_ACCESS_KEY_ID: FAKE_AWS.accessKeyId, AWS_SECRET_ACCESS_KEY: FAKE_AWS.secretAccessKey, BEDROCK_KEY: "bedrock-api-key-0123456789" };
const MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0";

function model(options: Record<string, unknown> = {}, envVars: Record<string, string> = ENV): ModelInstance {
  const checked = checkOptions(plugin.options!, { region: "eu-west-1", baseUrl: fake.url, upstreamModel: MODEL, timeouts: { connectMs: 2_000, firstByteMs: 2_000, idleMs: 2_000, totalMs: 5_000 }, ...options });
  expect(checked.problems).toEqual([]);
  expect(plugin.validateOptions!(checked.options as never)).toEqual([]);
  return plugin.create(hostTestContext(checked.options, { modelId: "claude", envVars }) as never) as ModelInstance;
}
const user = (content: any) => ({ role: "user" as const, content }) as ChatCompletionRequest["messages"][number];
const req = (over: Partial<ChatCompletionRequest> = {}): ChatCompletionRequest => ({ model: "claude", messages: [{ role: "system", content: "Be brief." }, user("Count for me.")], max_tokens: 8, ...over });
const sent = (f = fake) => f.requests.at(-1)!;
async function collect(it: AsyncIterable<ChatStreamEvent>): Promise<ChatCompletionChunk[]> {
  const out: ChatCompletionChunk[] = [];
  for await (const e of it) {
    expect(problemWithStreamEvent(e)).toBeNull();
    if (e.data !== "[DONE]") out.push(e.json!);
  }
  return out;
}
async function failure(p: Promise<unknown>): Promise<PluginError> {
  const err = await p.then(() => undefined, (e) => e);
  expect(isPluginError(err)).toBe(true);
  return err;
}
const client = (err: PluginError) => {
  const f = describeFailure(err);
  return { status: f.status, code: f.code, retryAfter: f.retryAfterSeconds, retryable: f.retryable };
};

describe("chat → Converse", () => {
  test("complete: signed for its region, the Converse request, the answer, usage with cache reads and writes", async () => {
    fake.behave({ cacheRead: 5, cacheWrite: 2 });
    const r = await model().chat!.complete(req({ stop: " ten", temperature: 0.5, top_p: 0.9, top_k: 40 } as any), testCall());
    const s = sent();
    expect([s.path, s.modelId, s.region]).toEqual([`/model/${encodeURIComponent(MODEL)}/converse`, MODEL, "eu-west-1"]);
    expect(s.headers.authorization).toMatch(new RegExp(`^AWS4-HMAC-SHA256 Credential=${FAKE_AWS.accessKeyId}/\\d{8}/eu-west-1/bedrock/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*x-amz-date[a-z0-9;-]*, Signature=[0-9a-f]{64}$`));
    expect(s.body).toEqual({
      messages: [{ role: "user", content: [{ text: "Count for me." }] }], system: [{ text: "Be brief." }],
      inferenceConfig: { maxTokens: 8, temperature: 0.5, topP: 0.9, stopSequences: [" ten"] }, additionalModelRequestFields: { top_k: 40 },
    });
    expect(r.completion.choices[0]).toMatchObject({ message: { role: "assistant", content: " one two three four five six seven eight" }, finish_reason: "length" });
    const u = r.upstreamUsage as any;
    expect(u).toMatchObject({ completion_tokens: 8, prompt_tokens_details: { cached_tokens: 5, cache_write_tokens: 2 } });
    expect(u.prompt_tokens).toBe(u.total_tokens - 8);
  });

  test("stream: event-stream frames as chunks — reasoning, text, finish, usage, [DONE]", async () => {
    fake.behave({ reasoning: "Two words.", tokens: 3, cacheRead: 1 });
    const chunks = await collect(await model({ thinking: "claude" }).chat!.stream!(req({ stream: true, max_tokens: 2000, reasoning_effort: "low" }), testCall()));
    expect(sent().path).toEndWith("/converse-stream");
    expect(sent().body.additionalModelRequestFields).toEqual({ thinking: { type: "enabled", budget_tokens: 1024 } });
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: "assistant", content: "" });
    expect(chunks.map((c) => c.choices[0]?.delta.reasoning_content ?? "").join("")).toBe("Two words.");
    expect(chunks.flatMap((c) => (c.choices[0]?.delta as any)?.thinking_blocks ?? [])).toEqual([{ type: "thinking", thinking: "Two words.", signature: "sig-10" }]);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe(" one two three");
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe("stop");
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens_details: { cached_tokens: 1 } } });
    // thinking "off" (the default): reasoning_effort is left out
    await collect(await model().chat!.stream!(req({ stream: true, reasoning_effort: "low" }), testCall()));
    expect(sent().body.additionalModelRequestFields).toBeUndefined();
  });

  test("tools: toolConfig and toolChoice; toolUse back as tool_calls; results as toolResult blocks; streamed in pieces", async () => {
    const tools = [{ type: "function" as const, function: { name: "get_weather", description: "Weather", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
    fake.behave({ toolUse: [{ name: "get_weather", input: { city: "Paris" } }] });
    const m = model({ cachePrompt: true });
    const first = await m.chat!.complete(req({ tools, tool_choice: "required" }), testCall());
    expect(sent().body.toolConfig).toEqual({ tools: [{ toolSpec: { name: "get_weather", description: "Weather", inputSchema: { json: tools[0]!.function.parameters } } }, { cachePoint: { type: "default" } }], toolChoice: { any: {} } });
    expect(sent().body.system).toEqual([{ text: "Be brief." }, { cachePoint: { type: "default" } }]);
    const calls = first.completion.choices[0]!.message.tool_calls as any[];
    expect([first.completion.choices[0]!.finish_reason, calls[0].function.name, JSON.parse(calls[0].function.arguments)]).toEqual(["tool_calls", "get_weather", { city: "Paris" }]);
    const messages: any[] = [...req().messages, { role: "assistant", content: null, tool_calls: calls }, { role: "tool", tool_call_id: calls[0].id, content: "18°C" }];
    expect((await m.chat!.complete(req({ tools, messages }), testCall())).completion.choices[0]!.message.content).toBe(" one two three four five six seven eight");
    expect(sent().body.messages.slice(1)).toEqual([
      { role: "assistant", content: [{ toolUse: { toolUseId: calls[0].id, name: "get_weather", input: { city: "Paris" } } }] },
      { role: "user", content: [{ toolResult: { toolUseId: calls[0].id, content: [{ text: "18°C" }] } }] },
    ]);
    const chunks = await collect(await m.chat!.stream!(req({ tools, stream: true }), testCall()));
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect([deltas[0]!.function!.name, JSON.parse(deltas.map((d) => d.function?.arguments ?? "").join(""))]).toEqual(["get_weather", { city: "Paris" }]);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe("tool_calls");
  });

  test("images: data URLs and downloaded URLs as image bytes; a tool message answering nothing: 400, nothing sent", async () => {
    const parts = [{ type: "text", text: "What is this?" }, { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } }, { type: "image_url", image_url: { url: imageUrl } }];
    await model({ imageUrls: { allowPrivateNetwork: true } }).chat!.complete(req({ messages: [user(parts)] }), testCall());
    expect(sent().body.messages[0].content).toEqual([{ text: "What is this?" }, { image: { format: "png", source: { bytes: PNG } } }, { image: { format: "png", source: { bytes: PNG } } }]);
    const blocked = await failure(model().chat!.complete(req({ messages: [user(parts)] }), testCall()));
    expect([client(blocked).status, blocked.param]).toEqual([400, "messages[0].content[2].image_url.url"]);
    const orphan = await failure(model().chat!.complete(req({ messages: [user("Hi"), { role: "tool", tool_call_id: "nope", content: "x" }] }), testCall()));
    expect([orphan.kind, orphan.param]).toEqual(["invalid_request", "messages[1].tool_call_id"]);
    expect(fake.requests.length).toBe(1);
  });
});

describe("Bedrock's exceptions → the client's status", () => {
  const streamed = (m: ModelInstance) => failure((async () => collect(await m.chat!.stream!(req({ stream: true }), testCall())))());
  const both = async (m: ModelInstance) => [await failure(m.chat!.complete(req(), testCall())), await streamed(m)];

  test("ThrottlingException: 429 with its Retry-After, else the configured wait", async () => {
    fake.behave({ exception: "ThrottlingException", retryAfter: 4 });
    for (const e of await both(model())) expect(client(e)).toMatchObject({ status: 429, code: "ThrottlingException", retryAfter: 4, retryable: true });
    fake.behave({ exception: "ThrottlingException" });
    expect(client(await failure(model({ throttleRetryAfterSeconds: 2 }).chat!.complete(req(), testCall())))).toMatchObject({ status: 429, retryAfter: 2 });
  });

  test("ValidationException 400 with Bedrock's message; AccessDenied and a wrong secret: 502 upstream_auth_failed; ModelNotReady: 503; ServiceUnavailable: 502, retryable", async () => {
    fake.behave({ exception: "ValidationException", errorMessage: "The model returned the following errors: max_tokens: too large" });
    const bad = await failure(model().chat!.complete(req(), testCall()));
    expect([client(bad).status, bad.message]).toEqual([400, expect.stringContaining("max_tokens: too large")]);
    fake.behave({ exception: "AccessDeniedException" });
    expect(client(await failure(model().chat!.complete(req(), testCall()))).code).toBe("upstream_auth_failed");
    fake.behave({});
    const wrong = await failure(model({}, { ...ENV, AWS_SECRET_ACCESS_KEY: "not-the-secret-0123456789" }).chat!.complete(req(), testCall()));
    expect([client(wrong).code, wrong.code]).toEqual(["upstream_auth_failed", "InvalidSignatureException"]);
    fake.behave({ exception: "ModelNotReadyException" });
    expect(client(await failure(model().chat!.complete(req(), testCall())))).toMatchObject({ status: 503, code: "model_overloaded", retryable: true });
    fake.behave({ exception: "ServiceUnavailableException" });
    expect(client(await failure(model().chat!.complete(req(), testCall())))).toMatchObject({ status: 502, retryable: true });
  });

  test("an exception frame before any output is what it means (a throttle: 429); after output, stream_interrupted", async () => {
    fake.behave({ streamExceptionAfter: 0, streamException: "throttlingException" });
    expect(client(await streamed(model()))).toMatchObject({ status: 429 });
    fake.behave({ streamExceptionAfter: 2 });
    expect((await streamed(model())).kind).toBe("stream_interrupted");
  });
});

test("two deployments in two regions: each signed for its own; a throttled one is skipped and its breaker waits", async () => {
  const m = model({ region: "us-east-1", baseUrl: undefined, deployments: [{ name: "virginia", baseUrl: fake.url }, { name: "frankfurt", region: "eu-central-1", baseUrl: other.url }] });
  fake.behave({ exception: "ThrottlingException", retryAfter: 30 });
  for (let i = 0; i < 3; i++) expect((await m.chat!.complete(req(), testCall())).completion.choices[0]!.message.content).toBeTruthy();
  expect(fake.requests.map((r) => r.region)).toEqual(["us-east-1"]);
  expect(other.requests.map((r) => r.region)).toEqual(["eu-central-1", "eu-central-1", "eu-central-1"]);
  expect(m.upstreams!().find((d) => d.name === "virginia")!.state).toBe("open");
});

test("a Bedrock API key (apiKeyEnv) goes as a Bearer token instead of a signature", async () => {
  await model({ apiKeyEnv: "BEDROCK_KEY" }, { BEDROCK_KEY: ENV.BEDROCK_KEY }).chat!.complete(req(), testCall());
  expect(sent().headers.authorization).toBe(`Bearer ${ENV.BEDROCK_KEY}`);
});
