/**
 * The anthropic plugin against the fake Anthropic API (test/fakes/anthropic-upstream.ts): what
 * reaches the upstream for a chat request, what comes back (non-streamed and streamed), tools,
 * images, thinking, each failure mode as the kind (and so the client status) the SDK's table gives,
 * several deployments with breakers, and the native Messages capability as a pass-through.
 */
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import {
  checkOptions, describeFailure, isPluginError, problemWithStreamEvent,
  type ChatCompletionChunk, type ChatCompletionRequest, type ChatStreamEvent, type MessagesStreamEvent, type ModelInstance, type PluginError,
} from "@reelay/plugin-sdk";
import { problemWithMessagesGrammar } from "@reelay/plugin-sdk/contract";
import { testCall, testPluginContext } from "@reelay/plugin-sdk/testing";
import { fakeInputTokens, replyText, startFakeAnthropic, type FakeAnthropic } from "../../test/fakes/anthropic-upstream.ts";
import plugin from "./index.ts";

const fake = await startFakeAnthropic();
const other = await startFakeAnthropic({ apiKey: "sk-ant-other-deployment-key" });
afterAll(() => Promise.all([fake.stop(), other.stop()]));
beforeEach(() => {
  fake.reset();
  other.reset();
});

const ENV = { ANTHROPIC_KEY: fake.apiKey, OTHER_KEY: other.apiKey };
const QUICK = { connectMs: 2_000, firstByteMs: 2_000, idleMs: 2_000, totalMs: 5_000 };

/** A model as the host builds it: options checked against the schema (defaults filled). */
function model(options: Record<string, unknown> = {}, maxOutputTokens?: number): ModelInstance {
  const checked = checkOptions(plugin.options!, { baseUrl: fake.url, apiKeyEnv: "ANTHROPIC_KEY", upstreamModel: "claude-up", timeouts: QUICK, ...options });
  expect(checked.problems).toEqual([]);
  expect(plugin.validateOptions!(checked.options as never)).toEqual([]);
  const ctx = testPluginContext(checked.options, { modelId: "claude", envVars: ENV, model: { pricing: {}, maxOutputTokens } });
  return plugin.create(ctx as never) as ModelInstance;
}

const user = (content: ChatCompletionRequest["messages"][number]["content"]) => ({ role: "user" as const, content }) as ChatCompletionRequest["messages"][number];
const req = (over: Partial<ChatCompletionRequest> = {}): ChatCompletionRequest => ({ model: "claude", messages: [{ role: "system", content: "Be brief." }, user("Count for me.")], max_tokens: 8, ...over });
const sent = (f: FakeAnthropic = fake, i = -1) => f.requests.at(i)!;

async function collect(it: AsyncIterable<ChatStreamEvent>): Promise<ChatCompletionChunk[]> {
  const out: ChatCompletionChunk[] = [];
  for await (const e of it) {
    expect(problemWithStreamEvent(e)).toBeNull();
    if (e.data !== "[DONE]") out.push(e.json!);
  }
  return out;
}
const textOf = (chunks: ChatCompletionChunk[]) => chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");

async function failure(p: Promise<unknown>): Promise<PluginError> {
  const err = await p.then(() => undefined, (e) => e);
  expect(isPluginError(err)).toBe(true);
  return err;
}
const client = (err: PluginError) => {
  const f = describeFailure(err);
  return { status: f.status, code: f.code, retryable: f.retryable, retryAfter: f.retryAfterSeconds };
};

describe("options", () => {
  test("defaults, and each problem names its option", () => {
    const { options, problems } = checkOptions(plugin.options!, {});
    expect(problems).toEqual([]);
    expect(options).toMatchObject({ anthropicVersion: "2023-06-01", defaultMaxTokens: 4096, reasoningBudgets: { low: 1024, medium: 2048, high: 4096 }, timeouts: { connectMs: 10_000 } });
    expect(plugin.validateOptions!(options as never)).toEqual([]); // baseUrl defaults to https://api.anthropic.com
    const bad = checkOptions(plugin.options!, { baseUrl: "ftp://x", anthropicVersion: "latest", betas: ["a b"], reasoningBudgets: { low: 10 }, extra: 1 });
    expect(bad.problems.map((p) => p.option).sort()).toEqual(["anthropicVersion", "baseUrl", "betas.0", "extra", "reasoningBudgets.low"]);
    const both = checkOptions(plugin.options!, { baseUrl: fake.url, deployments: [{ baseUrl: fake.url }] }).options;
    expect(plugin.validateOptions!(both as never)).toEqual(['option "deployments": give either "baseUrl" (with "apiKeyEnv") or "deployments", not both']);
  });
});

describe("chat → Messages", () => {
  test("complete: the request Anthropic gets, the completion and usage (cache reads and writes counted once in prompt_tokens)", async () => {
    fake.behave({ cacheRead: 4, cacheWrite: 2 });
    const r = await model().chat!.complete(req({ stop: " three", temperature: 0.5, top_p: 0.9, user: "u-42", seed: 7, frequency_penalty: 1 }), testCall());
    const s = sent();
    expect(s.headers).toMatchObject({ "x-api-key": fake.apiKey, "anthropic-version": "2023-06-01" });
    expect(s.headers["anthropic-beta"]).toBeUndefined();
    // seed and frequency_penalty have no Anthropic equivalent: left out (Anthropic refuses unknown fields)
    expect(s.body).toEqual({
      model: "claude-up", max_tokens: 8, system: [{ type: "text", text: "Be brief." }], messages: [{ role: "user", content: [{ type: "text", text: "Count for me." }] }],
      stop_sequences: [" three"], temperature: 0.5, top_p: 0.9, metadata: { user_id: "u-42" },
    });
    expect(r.completion.choices[0]).toMatchObject({ message: { role: "assistant", content: replyText(2) }, finish_reason: "stop" });
    const prompt = fakeInputTokens(s.body);
    const usage = { prompt_tokens: prompt, completion_tokens: 2, total_tokens: prompt + 2, prompt_tokens_details: { cached_tokens: 4, cache_write_tokens: 2 } };
    expect(r.upstreamUsage).toEqual(usage);
    expect(r.completion.usage).toEqual(usage);
  });

  test("max_tokens: the clamped value the host forwards, else max_completion_tokens, else the model's maximum, else defaultMaxTokens", async () => {
    await model().chat!.complete(req({ max_tokens: undefined, max_completion_tokens: 5 }), testCall());
    await model({}, 6).chat!.complete(req({ max_tokens: undefined }), testCall());
    await model({ defaultMaxTokens: 7 }).chat!.complete(req({ max_tokens: undefined }), testCall());
    expect(fake.requests.map((r) => r.body.max_tokens)).toEqual([5, 6, 7]);
  });

  test("stream: role first, one chunk per token, finish, the usage chunk, [DONE]", async () => {
    fake.behave({ cacheRead: 3 });
    const events: ChatStreamEvent[] = [];
    for await (const e of await model().chat!.stream!(req({ stream: true }), testCall())) events.push(e);
    expect(events.at(-1)!.data).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((e) => e.json!);
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: "assistant", content: "" });
    expect(textOf(chunks)).toBe(replyText(8));
    expect(chunks.filter((c) => c.choices[0]?.delta.content).length).toBe(8);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe("length");
    const prompt = fakeInputTokens(sent().body);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: prompt, completion_tokens: 8, prompt_tokens_details: { cached_tokens: 3, cache_write_tokens: 0 } } });
    expect(sent().body.stream).toBe(true);
  });

  test("tools: function tools and tool_choice offered; tool_use answered as tool_calls; the results go back as tool_result blocks paired with their tool_use", async () => {
    const tools = [{ type: "function" as const, function: { name: "get_weather", description: "Weather in a city", parameters: { type: "object", properties: { city: { type: "string" } } } } }];
    fake.behave({ toolUse: [{ name: "get_weather", input: { city: "Paris" } }, { name: "get_weather", input: { city: "Oslo" } }] });
    const m = model();
    const first = await m.chat!.complete(req({ tools, tool_choice: "required", parallel_tool_calls: false }), testCall());
    expect(sent().body).toMatchObject({ tools: [{ name: "get_weather", description: "Weather in a city", input_schema: tools[0]!.function.parameters }], tool_choice: { type: "any", disable_parallel_tool_use: true } });
    const calls = first.completion.choices[0]!.message.tool_calls! as Array<{ id: string; type: "function"; function: { name: string; arguments: string } }>;
    expect(first.completion.choices[0]).toMatchObject({ finish_reason: "tool_calls", message: { content: null } });
    expect(calls.map((c) => [c.type, c.function.name, JSON.parse(c.function.arguments)])).toEqual([["function", "get_weather", { city: "Paris" }], ["function", "get_weather", { city: "Oslo" }]]);

    // the client runs the tools and sends the results back
    const messages: ChatCompletionRequest["messages"] = [...req().messages, { role: "assistant", content: null, tool_calls: calls }, { role: "tool", tool_call_id: calls[0]!.id, content: "18°C" }, { role: "tool", tool_call_id: calls[1]!.id, content: [{ type: "text", text: "-3°C" }] }];
    const second = await m.chat!.complete(req({ tools, messages, max_tokens: 3 }), testCall());
    expect(second.completion.choices[0]!.message.content).toBe(replyText(3));
    expect(sent().body.messages.slice(1)).toEqual([
      { role: "assistant", content: calls.map((c) => ({ type: "tool_use", id: c.id, name: "get_weather", input: JSON.parse(c.function.arguments) })) },
      { role: "user", content: [{ type: "tool_result", tool_use_id: calls[0]!.id, content: "18°C" }, { type: "tool_result", tool_use_id: calls[1]!.id, content: [{ type: "text", text: "-3°C" }] }] },
    ]);

    // streamed: the call's id and name first, then its arguments in pieces, as OpenAI streams them
    const chunks = await collect(await m.chat!.stream!(req({ tools, stream: true }), testCall()));
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    const args = [0, 1].map((i) => deltas.filter((d) => d.index === i).map((d) => d.function?.arguments ?? "").join(""));
    expect(args.map((a) => JSON.parse(a))).toEqual([{ city: "Paris" }, { city: "Oslo" }]);
    expect(deltas.filter((d) => d.id).map((d) => [d.index, d.function?.name])).toEqual([[0, "get_weather"], [1, "get_weather"]]);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe("tool_calls");
  });

  test("a tool message that answers no tool call of the assistant message before it: 400 naming it, nothing sent", async () => {
    const messages: ChatCompletionRequest["messages"] = [user("Hi"), { role: "assistant", content: "Hello" }, { role: "tool", tool_call_id: "call_nope", content: "x" }];
    const err = await failure(model().chat!.complete(req({ messages }), testCall()));
    expect([err.kind, err.param, client(err).status]).toEqual(["invalid_request", "messages[2].tool_call_id", 400]);
    expect(fake.requests.length).toBe(0);
  });

  test("images: a data URL as a base64 block, an https URL as a url block; audio is refused with 400 naming the part", async () => {
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==";
    await model().chat!.complete(req({ messages: [user([{ type: "text", text: "What is this?" }, { type: "image_url", image_url: { url: `data:image/png;base64,${png}` } }, { type: "image_url", image_url: { url: "https://example.com/cat.jpg" } }])] }), testCall());
    expect(sent().body.messages[0].content).toEqual([
      { type: "text", text: "What is this?" },
      { type: "image", source: { type: "base64", media_type: "image/png", data: png } },
      { type: "image", source: { type: "url", url: "https://example.com/cat.jpg" } },
    ]);
    const err = await failure(model().chat!.complete(req({ messages: [user([{ type: "input_audio", input_audio: { data: "AAAA", format: "wav" } }])] }), testCall()));
    expect([err.kind, err.param]).toEqual(["invalid_request", "messages[0].content[0]"]);
  });

  test("thinking → reasoning_content (and thinking_blocks with the signature, which a client sends back to continue)", async () => {
    fake.behave({ thinking: "Two plus two is four.", text: "4" });
    const m = model();
    const r = await m.chat!.complete(req({ reasoning_effort: "low", max_tokens: 2000 }), testCall());
    expect(sent().body.thinking).toEqual({ type: "enabled", budget_tokens: 1024 });
    const message = r.completion.choices[0]!.message as any;
    expect([message.content, message.reasoning_content]).toEqual(["4", "Two plus two is four."]);
    expect(message.thinking_blocks).toEqual([{ type: "thinking", thinking: "Two plus two is four.", signature: expect.stringMatching(/^sig-/) }]);

    const chunks = await collect(await m.chat!.stream!(req({ reasoning_effort: "medium", max_tokens: 2000, stream: true }), testCall()));
    expect(sent().body.thinking).toEqual({ type: "enabled", budget_tokens: 1999 }); // medium's 2,048 cut below max_tokens
    expect(chunks.map((c) => c.choices[0]?.delta.reasoning_content ?? "").join("")).toBe("Two plus two is four.");
    expect(textOf(chunks)).toBe("4");
    expect(chunks.flatMap((c) => (c.choices[0]?.delta as any)?.thinking_blocks ?? [])).toEqual(message.thinking_blocks);

    // sent back on the next turn: the thinking block (with its signature) leads the assistant turn
    await m.chat!.complete(req({ messages: [user("2+2?"), { role: "assistant", content: "4", thinking_blocks: message.thinking_blocks } as never, user("And 3+3?")] }), testCall());
    expect(sent().body.messages[1]).toEqual({ role: "assistant", content: [...message.thinking_blocks, { type: "text", text: "4" }] });
    // no room for Anthropic's minimum budget of 1,024: thinking stays off
    await m.chat!.complete(req({ reasoning_effort: "high", max_tokens: 100 }), testCall());
    expect(sent().body.thinking).toBeUndefined();
  });

  test("refusal → finish_reason content_filter, billed like any answer", async () => {
    fake.behave({ text: "I can't help with that.", stopReason: "refusal" });
    const r = await model().chat!.complete(req(), testCall());
    expect(r.completion.choices[0]).toMatchObject({ finish_reason: "content_filter", message: { content: "I can't help with that." } });
    expect((r.upstreamUsage as any).completion_tokens).toBeGreaterThan(0);
  });
});

describe("failure modes → the client's status", () => {
  const both = async (m: ModelInstance) => [
    await failure(m.chat!.complete(req(), testCall())),
    await failure((async () => { for await (const _ of await m.chat!.stream!(req({ stream: true }), testCall())); })()),
  ];

  test("400 invalid_request_error: 400 with Anthropic's message", async () => {
    fake.behave({ status: 400, errorMessage: "messages.0.content: bad block" });
    for (const err of await both(model())) expect({ ...client(err), message: err.message }).toEqual({ status: 400, code: "invalid_request_error", retryable: false, retryAfter: undefined, message: "messages.0.content: bad block" });
  });

  test("401 (reelay's key refused): 502 upstream_auth_failed, not the client's fault", async () => {
    const err = await failure(model({ apiKeyEnv: "OTHER_KEY" }).chat!.complete(req(), testCall()));
    expect(client(err)).toMatchObject({ status: 502, code: "upstream_auth_failed", retryable: false });
  });

  test("429 with retry-after: 429 with that Retry-After", async () => {
    fake.behave({ status: 429, retryAfter: 7 });
    for (const err of await both(model())) expect(client(err)).toEqual({ status: 429, code: "rate_limit_error", retryable: true, retryAfter: 7 });
  });

  test("529 overloaded: 503, retryable; the same for an overloaded error event before any output", async () => {
    fake.behave({ status: 529, retryAfter: 3 });
    for (const err of await both(model())) expect(client(err)).toEqual({ status: 503, code: "model_overloaded", retryable: true, retryAfter: 3 });
    fake.behave({ errorEventAfterDeltas: 0 });
    const err = await failure((async () => { for await (const _ of await model().chat!.stream!(req({ stream: true }), testCall())); })());
    expect([err.kind, client(err).status, client(err).retryable]).toEqual(["overloaded", 503, true]);
  });

  test("an error event or a reset after output began: stream_interrupted (the client keeps what it got, pays for it)", async () => {
    for (const b of [{ errorEventAfterDeltas: 3 }, { resetAfterDeltas: 3 }]) {
      // the reset waits until the three deltas have arrived here (an RST drops what was not yet read)
      let arrived!: () => void;
      fake.behave({ ...b, resetWhen: new Promise<void>((r) => (arrived = r)) });
      const got: ChatStreamEvent[] = [];
      const err = await failure((async () => {
        for await (const e of await model().chat!.stream!(req({ stream: true }), testCall())) {
          got.push(e);
          if (textOf(got.map((g) => g.json!)) === replyText(3)) arrived();
        }
      })());
      expect([err.kind, client(err).retryable]).toEqual(["stream_interrupted", false]);
      expect(textOf(got.map((e) => e.json!))).toBe(replyText(3));
    }
  });

  test("a slow first byte past firstByteMs: 504, retryable; a reset before any answer: 502 upstream_unavailable", async () => {
    fake.behave({ delayFirstByteMs: 1_000 });
    const slow = model({ timeouts: { ...QUICK, firstByteMs: 200 } });
    const err = await failure((async () => { for await (const _ of await slow.chat!.stream!(req({ stream: true }), testCall())); })());
    expect(client(err)).toMatchObject({ status: 504, code: "upstream_timeout", retryable: true });
    fake.behave({ resetBeforeAnswer: true });
    expect(client(await failure(model().chat!.complete(req(), testCall())))).toMatchObject({ status: 502, code: "upstream_unavailable", retryable: true });
  });
});

describe("deployments", () => {
  const two = (routing: Record<string, unknown> = {}) => model({
    baseUrl: undefined, apiKeyEnv: undefined,
    deployments: [{ name: "a", baseUrl: fake.url, apiKeyEnv: "ANTHROPIC_KEY" }, { name: "b", baseUrl: other.url, apiKeyEnv: "OTHER_KEY", upstreamModel: "claude-on-b" }],
    routing: { breaker: { consecutiveFailures: 2, cooldownMs: 60_000, minRequests: 1000 }, ...routing },
  });

  test("529 on one deployment: the other answers; after consecutiveFailures its circuit opens and it gets no more traffic", async () => {
    fake.behave({ status: 529 });
    const m = two();
    for (let i = 0; i < 6; i++) expect((await m.chat!.complete(req(), testCall())).completion.choices[0]!.message.content).toBe(replyText(8));
    expect(fake.requests.length).toBe(2);
    expect(other.requests.length).toBe(6);
    expect(other.requests[0]!.headers["x-api-key"]).toBe(other.apiKey);
    expect(other.requests[0]!.body.model).toBe("claude-on-b");
    const status = Object.fromEntries(m.upstreams!().map((d) => [d.name, d]));
    expect(status.a).toMatchObject({ state: "open", errors: { overloaded: 2 } });
    expect(status.b).toMatchObject({ state: "closed", successes: 6 });
  });

  test("a stream whose first deployment sends an overloaded error event before any output is answered by the other; both overloaded → 503", async () => {
    fake.behave({ errorEventAfterDeltas: 0 });
    const m = two();
    const first = await collect(await m.chat!.stream!(req({ stream: true }), testCall()));
    expect(textOf(first)).toBe(replyText(8));
    expect([fake.requests.length, other.requests.length]).toEqual([1, 1]);
    fake.behave({ status: 529 });
    other.behave({ status: 529 });
    const err = await failure(m.chat!.complete(req(), testCall()));
    expect(client(err)).toMatchObject({ status: 503, retryable: true });
  });
});

describe("native Messages capability (pass-through)", () => {
  const body = {
    model: "claude", max_tokens: 2000, stream: false,
    system: [{ type: "text", text: "A long, cached system prompt.", cache_control: { type: "ephemeral" } }],
    thinking: { type: "enabled", budget_tokens: 1024 },
    messages: [
      { role: "user", content: "2+2?" },
      { role: "assistant", content: [{ type: "thinking", thinking: "Easy.", signature: "sig-client-kept" }, { type: "text", text: "4" }] },
      { role: "user", content: [{ type: "text", text: "And 3+3?", cache_control: { type: "ephemeral", ttl: "1h" } }] },
    ],
    context_management: { edits: [{ type: "clear_tool_uses_20250919" }] },
  };

  test("create: the body reaches Anthropic as sent (model mapped), with the client's version and betas; the answer comes back untouched", async () => {
    fake.behave({ thinking: "Six.", signature: "sig-upstream-123", text: "6", cacheRead: 10, cacheWrite: 5 });
    const m = model({ betas: ["model-beta-2025"] });
    const { message, upstreamUsage } = await m.messages!.create(body, testCall({ anthropicVersion: "2026-10-21", anthropicBeta: ["interleaved-thinking-2025-05-14", "model-beta-2025"] }));
    const { stream: _, ...rest } = body;
    expect(sent().body).toEqual({ ...rest, model: "claude-up" });
    expect(sent().headers).toMatchObject({ "anthropic-version": "2026-10-21", "anthropic-beta": "model-beta-2025,interleaved-thinking-2025-05-14", "x-api-key": fake.apiKey });
    expect(message.content).toEqual([{ type: "thinking", thinking: "Six.", signature: "sig-upstream-123" }, { type: "text", text: "6" }]);
    expect(message.model).toBe("claude-up");
    expect(upstreamUsage).toEqual(message.usage);
    expect(upstreamUsage).toMatchObject({ cache_read_input_tokens: 10, cache_creation_input_tokens: 5 });
  });

  test("stream: the upstream's events as it sent them, in the Messages grammar", async () => {
    fake.behave({ thinking: "Six.", text: "6", toolUse: [{ name: "calc", input: { expr: "3+3" } }] });
    const events: MessagesStreamEvent[] = [];
    const withTools = { ...body, tools: [{ name: "calc", input_schema: { type: "object" } }] };
    for await (const e of await model().messages!.stream!(withTools, testCall())) events.push(e);
    expect(problemWithMessagesGrammar(events)).toBeNull();
    expect(sent().body).toMatchObject({ stream: true, model: "claude-up" });
    const deltas = events.filter((e) => e.event === "content_block_delta").map((e) => (e.json as any).delta.type);
    expect(new Set(deltas)).toEqual(new Set(["thinking_delta", "signature_delta", "text_delta", "input_json_delta"]));
    for (const e of events) expect(JSON.parse(e.data)).toEqual(e.json);
  });

  test("stream: an overloaded error right after message_start fails over to the other deployment; one after output began is stream_interrupted", async () => {
    const m = model({
      baseUrl: undefined, apiKeyEnv: undefined,
      deployments: [{ name: "a", baseUrl: fake.url, apiKeyEnv: "ANTHROPIC_KEY", weight: 1000 }, { name: "b", baseUrl: other.url, apiKeyEnv: "OTHER_KEY" }],
    });
    fake.behave({ errorEventAfterDeltas: 0 });
    const events: MessagesStreamEvent[] = [];
    for await (const e of await m.messages!.stream!({ ...body, thinking: undefined, max_tokens: 8 } as never, testCall())) events.push(e);
    expect([fake.requests.length, other.requests.length]).toEqual([1, 1]);
    expect(events.filter((e) => e.event === "message_start").length).toBe(1); // a's message_start was never sent on
    fake.behave({ errorEventAfterDeltas: 2 });
    other.behave({ errorEventAfterDeltas: 2 });
    const err = await failure((async () => { for await (const _ of await m.messages!.stream!({ ...body, thinking: undefined, max_tokens: 8 } as never, testCall())); })());
    expect(err.kind).toBe("stream_interrupted");
  });

  test("countTokens asks the upstream, without the fields count_tokens refuses", async () => {
    const { max_tokens: _, ...countable } = body;
    const r = await model().messages!.countTokens!({ ...countable, temperature: 0.2 } as never, testCall());
    expect(sent().path).toBe("/v1/messages/count_tokens");
    expect(sent().body.max_tokens).toBeUndefined();
    expect(sent().body.temperature).toBeUndefined();
    expect(r).toEqual({ input_tokens: fakeInputTokens(body) });
  });

  test("errors as for chat: 400 with Anthropic's message, 529 overloaded", async () => {
    fake.behave({ status: 400, errorMessage: "messages.1.content.0.signature: invalid signature" });
    const err = await failure(model().messages!.create(body, testCall()));
    expect([client(err).status, err.message]).toEqual([400, "messages.1.content.0.signature: invalid signature"]);
    fake.behave({ status: 529 });
    expect(client(await failure(model().messages!.create(body, testCall())))).toMatchObject({ status: 503, retryable: true });
  });
});
