/**
 * The gemini plugin against the fake Gemini API (test/fakes/gemini.ts): the generateContent
 * request a chat request becomes, the answer and usage back (cached and thinking tokens), the
 * stream, function calls with their thought signatures, images (inline and downloaded through
 * reelay's real SSRF guard), safety blocks, each failure as the client status the SDK's table
 * gives, embeddings in batches, and two deployments.
 */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { checkOptions, describeFailure, isPluginError, problemWithStreamEvent, type ChatCompletionChunk, type ChatCompletionRequest, type ChatStreamEvent, type ModelInstance, type PluginError } from "@reelay/plugin-sdk";
import { testCall } from "@reelay/plugin-sdk/testing";
import { startFakeGemini } from "../../test/fakes/gemini.ts";
import { hostTestContext } from "../../test/support/plugin-context.ts";
import plugin from "./index.ts";

const fake = await startFakeGemini();
const other = await startFakeGemini({ apiKey: "AIza-other-deployment-key" });
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==";
const images = createServer((req, res) => {
  if (req.url === "/cat.png") return void res.writeHead(200, { "content-type": "image/png" }).end(Buffer.from(PNG, "base64"));
  res.writeHead(200, { "content-type": "text/html" }).end("<html></html>");
});
await new Promise<void>((r) => images.listen(0, "127.0.0.1", r));
const imageUrl = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
afterAll(() => Promise.all([fake.stop(), other.stop(), new Promise((r) => images.close(r))]));
beforeEach(() => {
  fake.reset();
  other.reset();
});

const ENV = { GEMINI_API_KEY: fake.apiKey, OTHER_KEY: other.apiKey };
const QUICK = { connectMs: 2_000, firstByteMs: 2_000, idleMs: 2_000, totalMs: 5_000 };

function model(options: Record<string, unknown> = {}): ModelInstance {
  const checked = checkOptions(plugin.options!, { baseUrl: fake.url, upstreamModel: "gemini-up", timeouts: QUICK, capabilities: ["chat", "embeddings"], ...options });
  expect(checked.problems).toEqual([]);
  expect(plugin.validateOptions!(checked.options as never)).toEqual([]);
  return plugin.create(hostTestContext(checked.options, { modelId: "gemini", envVars: ENV }) as never) as ModelInstance;
}
const user = (content: any) => ({ role: "user" as const, content }) as ChatCompletionRequest["messages"][number];
const req = (over: Partial<ChatCompletionRequest> = {}): ChatCompletionRequest => ({ model: "gemini", messages: [{ role: "system", content: "Be brief." }, user("Count for me.")], max_tokens: 8, ...over });
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
  return { status: f.status, code: f.code, retryAfter: f.retryAfterSeconds };
};

describe("chat → generateContent", () => {
  test("complete: the request on the wire, the answer, usage with cached and thinking tokens", async () => {
    fake.behave({ thought: "Counting.", cachedTokens: 3 });
    const r = await model().chat!.complete(req({ stop: " ten", temperature: 0.5, top_p: 0.9, top_k: 20, seed: 7, presence_penalty: 0.2, reasoning_effort: "low", response_format: { type: "json_object" } } as any), testCall());
    const s = sent();
    expect([s.path, s.headers["x-goog-api-key"]]).toEqual(["/v1beta/models/gemini-up:generateContent", fake.apiKey]);
    expect(s.headers.authorization).toBeUndefined();
    expect(s.body).toEqual({
      contents: [{ role: "user", parts: [{ text: "Count for me." }] }],
      systemInstruction: { parts: [{ text: "Be brief." }] },
      generationConfig: { maxOutputTokens: 8, stopSequences: [" ten"], temperature: 0.5, topP: 0.9, topK: 20, seed: 7, presencePenalty: 0.2, responseMimeType: "application/json", thinkingConfig: { thinkingBudget: 1024, includeThoughts: true } },
    });
    const m = r.completion.choices[0]!.message as any;
    // the thought's 3 tokens count against maxOutputTokens, as Gemini 2.5 counts thinking
    expect([m.content, m.reasoning_content, r.completion.choices[0]!.finish_reason]).toEqual([" one two three four five", "Counting.", "length"]);
    const u = r.upstreamUsage as any;
    expect(u).toMatchObject({ completion_tokens: 5 + 3, prompt_tokens_details: { cached_tokens: 3 }, completion_tokens_details: { reasoning_tokens: 3 } });
    expect(u.prompt_tokens).toBeGreaterThan(3);
  });

  test("stream: role first, thoughts as reasoning_content, text chunk by chunk, finish, usage, [DONE]", async () => {
    fake.behave({ thought: "Hmm.", tokens: 3 });
    const chunks = await collect(await model().chat!.stream!(req({ stream: true }), testCall()));
    expect(sent().path).toBe("/v1beta/models/gemini-up:streamGenerateContent");
    expect(sent().query).toEqual({ alt: "sse" });
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: "assistant", content: "" });
    expect(chunks.map((c) => c.choices[0]?.delta.reasoning_content ?? "").join("")).toBe("Hmm.");
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe(" one two three");
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe("stop");
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: 3 + 2, completion_tokens_details: { reasoning_tokens: 2 } } });
  });

  test("tools: declarations and tool_choice; calls back with their thought signature; results as function responses", async () => {
    const tools = [{ type: "function" as const, function: { name: "get_weather", description: "Weather", parameters: { type: "object", properties: { city: { type: "string" } }, additionalProperties: false } } }];
    fake.behave({ functionCalls: [{ name: "get_weather", args: { city: "Paris" } }, { name: "get_weather", args: { city: "Oslo" } }] });
    const m = model();
    const first = await m.chat!.complete(req({ tools, tool_choice: { type: "function", function: { name: "get_weather" } } }), testCall());
    expect(sent().body).toMatchObject({ tools: [{ functionDeclarations: [{ name: "get_weather", description: "Weather", parametersJsonSchema: tools[0]!.function.parameters }] }], toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_weather"] } } });
    const calls = first.completion.choices[0]!.message.tool_calls as any[];
    expect(first.completion.choices[0]!.finish_reason).toBe("tool_calls");
    expect(calls.map((c) => [c.function.name, JSON.parse(c.function.arguments), c.extra_content?.google?.thought_signature])).toEqual([["get_weather", { city: "Paris" }, "sig-get_weather"], ["get_weather", { city: "Oslo" }, undefined]]);
    expect(new Set(calls.map((c) => c.id)).size).toBe(2);

    const messages: any[] = [...req().messages, { role: "assistant", content: null, tool_calls: calls }, { role: "tool", tool_call_id: calls[0].id, content: '{"celsius":18}' }, { role: "tool", tool_call_id: calls[1].id, content: "-3°C" }];
    const second = await m.chat!.complete(req({ tools, messages }), testCall());
    expect(second.completion.choices[0]!.message.content).toBe(" one two three four five six seven eight");
    expect(sent().body.contents.slice(1)).toEqual([
      { role: "model", parts: [{ functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "sig-get_weather" }, { functionCall: { name: "get_weather", args: { city: "Oslo" } } }] },
      { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { celsius: 18 } } }, { functionResponse: { name: "get_weather", response: { content: "-3°C" } } }] },
    ]);
    // streamed: each call whole in one chunk, indexed
    const chunks = await collect(await m.chat!.stream!(req({ tools, stream: true }), testCall()));
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(deltas.map((d) => [d.index, d.function?.name, JSON.parse(d.function!.arguments!)])).toEqual([[0, "get_weather", { city: "Paris" }], [1, "get_weather", { city: "Oslo" }]]);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe("tool_calls");
  });

  test("images: a data URL inline; an http URL downloaded through the SSRF guard (private addresses only when allowed); not an image: 400", async () => {
    const parts = [{ type: "text", text: "What is this?" }, { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } }, { type: "image_url", image_url: { url: `${imageUrl}/cat.png` } }];
    await model({ imageUrls: { allowPrivateNetwork: true } }).chat!.complete(req({ messages: [user(parts)] }), testCall());
    expect(sent().body.contents[0].parts).toEqual([{ text: "What is this?" }, { inlineData: { mimeType: "image/png", data: PNG } }, { inlineData: { mimeType: "image/png", data: PNG } }]);
    const blocked = await failure(model().chat!.complete(req({ messages: [user(parts)] }), testCall()));
    expect([client(blocked).status, blocked.param, blocked.message]).toEqual([400, "messages[0].content[2].image_url.url", expect.stringContaining("blocked_address")]);
    const html = await failure(model({ imageUrls: { allowPrivateNetwork: true } }).chat!.complete(req({ messages: [user([{ type: "image_url", image_url: { url: `${imageUrl}/page` } }])] }), testCall()));
    expect([client(html).status, html.code]).toEqual([400, "invalid_image_url"]);
    expect(fake.requests.length).toBe(1);
  });

  test("safety: a blocked prompt is a refusal with finish_reason content_filter (its prompt billed); a SAFETY finish likewise", async () => {
    fake.behave({ blockPrompt: true });
    const r = await model().chat!.complete(req(), testCall());
    expect(r.completion.choices[0]).toMatchObject({ finish_reason: "content_filter", message: { content: null, refusal: "The prompt was blocked by Gemini (SAFETY)." } });
    expect((r.upstreamUsage as any).prompt_tokens).toBeGreaterThan(0);
    const chunks = await collect(await model().chat!.stream!(req({ stream: true }), testCall()));
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe("content_filter");
    fake.behave({ finishReason: "SAFETY", tokens: 2 });
    expect((await model().chat!.complete(req(), testCall())).completion.choices[0]!.finish_reason).toBe("content_filter");
  });

  test("n > 1 and logprobs are refused before anything is sent", async () => {
    expect((await failure(model().chat!.complete(req({ n: 2 }), testCall()))).param).toBe("n");
    expect((await failure(model().chat!.complete(req({ logprobs: true }), testCall()))).param).toBe("logprobs");
    expect(fake.requests.length).toBe(0);
  });
});

describe("failures → the client's status", () => {
  test("429 RESOURCE_EXHAUSTED: 429 with the RetryInfo delay as Retry-After", async () => {
    fake.behave({ status: 429, retryDelay: 37 });
    expect(client(await failure(model().chat!.complete(req(), testCall())))).toEqual({ status: 429, code: "RESOURCE_EXHAUSTED", retryAfter: 37 });
    expect(client(await failure(model().chat!.stream!(req({ stream: true }), testCall())))).toEqual({ status: 429, code: "RESOURCE_EXHAUSTED", retryAfter: 37 });
  });

  test("400 INVALID_ARGUMENT keeps Google's message; a bad key is reelay's (502 upstream_auth_failed); 503 UNAVAILABLE is a retryable 502", async () => {
    fake.behave({ status: 400, errorMessage: "* GenerateContentRequest.generation_config.max_output_tokens: must be positive" });
    const bad = await failure(model().chat!.complete(req(), testCall()));
    expect([client(bad).status, bad.code, bad.message]).toEqual([400, "INVALID_ARGUMENT", expect.stringContaining("max_output_tokens")]);
    fake.behave({});
    expect(client(await failure(model({ apiKeyEnv: "OTHER_KEY" }).chat!.complete(req(), testCall()))).code).toBe("upstream_auth_failed");
    fake.behave({ status: 503 });
    const unavailable = await failure(model().chat!.complete(req(), testCall()));
    expect([client(unavailable).status, unavailable.retryable]).toEqual([502, true]);
  });

  test("an error event after output: stream_interrupted; before any: the kind it means", async () => {
    fake.behave({ errorChunkAfter: 2, tokens: 6 });
    const err = await failure(collect(await model().chat!.stream!(req({ stream: true }), testCall())));
    expect(err.kind).toBe("stream_interrupted");
  });
});

describe("embeddings", () => {
  test("one input: embedContent; more: batchEmbedContents in calls of 100; dimensions → outputDimensionality", async () => {
    const m = model({ embeddingTaskType: "SEMANTIC_SIMILARITY" });
    const one = await m.embeddings!.embed({ body: { model: "gemini", input: "hello" }, inputs: ["hello"] } as never, testCall());
    expect([sent().path, sent().body]).toEqual(["/v1beta/models/gemini-up:embedContent", { content: { parts: [{ text: "hello" }] }, taskType: "SEMANTIC_SIMILARITY" }]);
    expect((one.data[0]!.embedding as number[]).length).toBe(8);
    const inputs = Array.from({ length: 150 }, (_, i) => `text ${i}`);
    const many = await m.embeddings!.embed({ body: { model: "gemini", input: inputs, dimensions: 4 }, inputs } as never, testCall());
    expect(fake.requests.slice(1).map((r) => [r.path, r.body.requests.length, r.body.requests[0].outputDimensionality])).toEqual([["/v1beta/models/gemini-up:batchEmbedContents", 100, 4], ["/v1beta/models/gemini-up:batchEmbedContents", 50, 4]]);
    expect(many.data.map((d) => d.index)).toEqual(inputs.map((_, i) => i));
    expect(many.data[149]!.embedding).toEqual((await m.embeddings!.embed({ body: { model: "gemini", input: "text 149", dimensions: 4 }, inputs: ["text 149"] } as never, testCall())).data[0]!.embedding);
  });
});

test("two deployments: a 429 on one moves the request to the other, whose key is its own", async () => {
  const m = model({ baseUrl: undefined, deployments: [{ name: "a", baseUrl: fake.url }, { name: "b", baseUrl: other.url, apiKeyEnv: "OTHER_KEY" }] });
  fake.behave({ status: 429, retryDelay: 5 });
  for (let i = 0; i < 3; i++) expect((await m.chat!.complete(req(), testCall())).completion.choices[0]!.message.content).toBeTruthy();
  expect(other.requests.every((r) => r.headers["x-goog-api-key"] === other.apiKey)).toBe(true);
  expect(fake.requests.length).toBe(1); // its breaker waits the RetryInfo delay
  expect(m.upstreams!().find((d) => d.name === "a")!.state).toBe("open");
});
