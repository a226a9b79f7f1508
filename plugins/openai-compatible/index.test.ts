import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { checkOptions, isPluginError, type ChatCompletionRequest, type ChatStreamEvent, type ModelInstance, type PluginError } from "@reelay/plugin-sdk";
import { testCall, testPluginContext } from "@reelay/plugin-sdk/testing";
import { fakeEmbedding, replyText, startFakeOpenAI } from "../../test/fakes/openai-upstream.ts";
import { countTextTokens, estimateChatPromptTokens as estimatePromptTokens } from "../../src/text/tokens.ts";
import plugin from "./index.ts";

const fake = await startFakeOpenAI();
afterAll(() => fake.stop());
beforeEach(() => fake.reset());

const messages: ChatCompletionRequest["messages"] = [{ role: "system", content: "Be brief." }, { role: "user", content: "Count for me, please.", name: "ann" }];
const req = (over: Record<string, unknown> = {}): ChatCompletionRequest => ({ model: "reelay-chat", messages, ...over });

/** A model as the host builds it: options checked against the schema (defaults filled); `fetchCalls` counts upstream attempts. */
function makeModel(options: Record<string, unknown>, env: Record<string, string> = {}) {
  const checked = checkOptions(plugin.options!, options);
  expect(checked.problems).toEqual([]);
  expect(plugin.validateOptions!(checked.options as never)).toEqual([]);
  const counter = { fetchCalls: 0 };
  const ctx = testPluginContext(checked.options, {
    modelId: "reelay-chat",
    envVars: env,
    fetch: ((input: any, init?: any) => { counter.fetchCalls++; return fetch(input, init); }) as typeof fetch,
  });
  return { model: plugin.create(ctx as never) as ModelInstance, counter, logs: ctx.logs };
}

const call = () => testCall();

async function collect(iterable: AsyncIterable<ChatStreamEvent>): Promise<ChatStreamEvent[]> {
  const out: ChatStreamEvent[] = [];
  for await (const e of iterable) out.push(e);
  return out;
}

async function failure(p: Promise<unknown>): Promise<PluginError> {
  const err = await p.then(() => undefined, (e) => e);
  expect(isPluginError(err)).toBe(true);
  return err;
}

describe("options schema", () => {
  test("each problem names its option", () => {
    const { problems } = checkOptions(plugin.options!, { baseUrl: "ftp://x", apiKeyEnv: "sk-123 secret", timeouts: { idleMs: -1, fooMs: 1 }, capabilities: ["video"], continuousUsageStats: "yes", extra: 1 });
    expect(problems.map((p) => p.option).sort()).toEqual(["apiKeyEnv", "baseUrl", "capabilities.0", "continuousUsageStats", "extra", "timeouts.fooMs", "timeouts.idleMs"]);
    // baseUrl or deployments: said by validateOptions, not the schema
    expect(checkOptions(plugin.options!, {}).problems).toEqual([]);
    expect(plugin.validateOptions!(checkOptions(plugin.options!, {}).options as never)).toEqual(['option "baseUrl": is required (or "deployments", a list of upstreams)']);
    expect(checkOptions(plugin.options!, { baseUrl: "https://api.openai.com/v1" }).problems).toEqual([]);
    expect(checkOptions(plugin.options!, { baseUrl: "https://api.openai.com/v1" }).options).toMatchObject({ capabilities: ["chat"], timeouts: { connectMs: 10_000, totalMs: 600_000 }, limits: { maxEventBytes: 1024 * 1024 } });
  });
});

describe("chat.complete", () => {
  test("returns the completion and usage, maps model, sends the key", async () => {
    const { model } = makeModel({ baseUrl: fake.url, upstreamModel: "up-model", apiKeyEnv: "UP_KEY" }, { UP_KEY: "sk-up" });
    const { completion, upstreamUsage: usage } = await model.chat!.complete(req({ max_tokens: 4 }), call());
    expect(completion.choices[0].message.content).toBe(replyText(4));
    expect(completion.model).toBe("up-model");
    expect(usage).toEqual({ prompt_tokens: estimatePromptTokens(messages), completion_tokens: 4, total_tokens: estimatePromptTokens(messages) + 4 });
    expect(fake.requests[0]!.headers.authorization).toBe("Bearer sk-up");
    expect(fake.requests[0]!.body.model).toBe("up-model");
  });

  test("forwards the body unchanged except model", async () => {
    const { model } = makeModel({ baseUrl: fake.url });
    const body = {
      model: "reelay-chat", messages, max_tokens: 3, seed: 42, vendor_extra: { top_k: 5, nested: [1, "x"] },
      response_format: { type: "json_schema", json_schema: { name: "n", schema: { type: "object" } } },
      tools: [{ type: "function", function: { name: "f", parameters: { type: "object", properties: {} } } }],
    };
    await model.chat!.complete(body as ChatCompletionRequest, call());
    expect(fake.requests[0]!.body).toEqual(body); // upstreamModel defaults to the model id
    expect(fake.requests[0]!.headers.authorization).toBeUndefined();
  });

  test("4xx passes status and the upstream's message; 5xx is upstream_http 5xx, not retried", async () => {
    const { model, counter } = makeModel({ baseUrl: fake.url });
    fake.behave({ status: 400, errorMessage: "max_tokens is too large", errorCode: "context_length_exceeded" });
    let err = await failure(model.chat!.complete(req(), call()));
    expect([err.kind, err.status, err.message, err.code]).toEqual(["upstream_http", 400, "max_tokens is too large", "context_length_exceeded"]);
    fake.behave({ status: 503 });
    err = await failure(model.chat!.complete(req(), call()));
    expect([err.kind, err.status, err.retryable]).toEqual(["upstream_http", 503, true]);
    expect(counter.fetchCalls).toBe(2);
  });

  test("total timeout → 'timeout', and the upstream request is aborted", async () => {
    const { model } = makeModel({ baseUrl: fake.url, timeouts: { totalMs: 150 } });
    fake.behave({ hang: true });
    const err = await failure(model.chat!.complete(req(), call()));
    expect(err.kind).toBe("timeout");
    await fake.waitForAbort();
  });
});

describe("connection failures", () => {
  test("refused → 'connect' after 2 retries", async () => {
    const gone = await startFakeOpenAI();
    await gone.stop();
    const { model, counter } = makeModel({ baseUrl: gone.url });
    const t = performance.now();
    const err = await failure(model.chat!.complete(req(), call()));
    expect(err.kind).toBe("connect");
    expect(counter.fetchCalls).toBe(3);
    expect(performance.now() - t).toBeGreaterThanOrEqual(390); // 100 + 300 ms backoff
  });

  test("an upstream that comes back during the retries answers", async () => {
    const first = await startFakeOpenAI();
    const port = first.port;
    await first.stop();
    const { model, counter } = makeModel({ baseUrl: first.url });
    let back: Awaited<ReturnType<typeof startFakeOpenAI>> | undefined;
    setTimeout(async () => { back = await startFakeOpenAI({ port }); }, 50);
    const { completion } = await model.chat!.complete(req({ max_tokens: 2 }), call());
    expect(completion.choices[0].message.content).toBe(replyText(2));
    expect(counter.fetchCalls).toBe(2);
    await back!.stop();
  });
});

describe("chat.stream", () => {
  test("one event per chunk then [DONE]; include_usage forced, client stream_options kept", async () => {
    const { model } = makeModel({ baseUrl: fake.url });
    const events = await collect(await model.chat!.stream!(req({ max_tokens: 3, stream: true, stream_options: { other: 1 } }), call()));
    expect(events.length).toBe(3 + 1 + 1 + 1); // 3 tokens, finish chunk, usage chunk, [DONE]
    expect(events.slice(0, 3).map((e) => e.json!.choices[0]!.delta.content)).toEqual([" one", " two", " three"]);
    expect(events[3]!.json!.choices[0]!.finish_reason).toBe("length");
    expect(events[4]!.json!.usage).toEqual({ prompt_tokens: estimatePromptTokens(messages), completion_tokens: 3, total_tokens: estimatePromptTokens(messages) + 3 });
    expect(events.at(-1)).toEqual({ data: "[DONE]" });
    expect(JSON.parse(events[0]!.data)).toEqual(events[0]!.json);
    expect(fake.requests[0]!.body.stream_options).toEqual({ other: 1, include_usage: true });
  });

  test("continuousUsageStats asks for per-chunk usage", async () => {
    const { model } = makeModel({ baseUrl: fake.url, continuousUsageStats: true });
    const events = await collect(await model.chat!.stream!(req({ max_tokens: 2, stream: true }), call()));
    expect(fake.requests[0]!.body.stream_options).toEqual({ include_usage: true, continuous_usage_stats: true });
    expect(events[1]!.json!.usage!.completion_tokens).toBe(2);
  });

  test("events are yielded as they arrive, not at the end", async () => {
    const { model } = makeModel({ baseUrl: fake.url });
    // the upstream sends its first chunk, then waits a minute before the next: the first event must
    // reach us long before the stream could end (a relay that buffered would time this test out)
    fake.behave({ delayBetweenChunksMs: 60_000 });
    const it = (await model.chat!.stream!(req({ max_tokens: 5 }), call()))[Symbol.asyncIterator]();
    const first = await it.next();
    expect(first.done).toBe(false);
    expect(first.value.json.choices[0].delta.role).toBe("assistant");
    await it.return?.(undefined);
  });

  test("4xx before the stream rejects stream() itself", async () => {
    const { model } = makeModel({ baseUrl: fake.url });
    fake.behave({ status: 429, errorMessage: "rate limited upstream" });
    const err = await failure(model.chat!.stream!(req(), call()));
    expect([err.kind, err.status, err.message]).toEqual(["upstream_http", 429, "rate limited upstream"]);
  });

  test("connect (headers) timeout → 'timeout'", async () => {
    const { model } = makeModel({ baseUrl: fake.url, timeouts: { connectMs: 100 } });
    fake.behave({ delayHeadersMs: 1000 });
    expect((await failure(model.chat!.stream!(req(), call()))).kind).toBe("timeout");
  });

  test("first-byte timeout → 'timeout' and the upstream sees the abort", async () => {
    const { model } = makeModel({ baseUrl: fake.url, timeouts: { firstByteMs: 100 } });
    fake.behave({ delayFirstChunkMs: 1000 });
    // stream() waits for the first event (a failure before it may go to another deployment)
    const err = await failure(model.chat!.stream!(req(), call()).then(collect));
    expect(err.kind).toBe("timeout");
    expect(err.message).toContain("first byte");
    await fake.waitForAbort();
  });

  test("idle timeout between chunks → 'stream_interrupted' after the first events", async () => {
    const { model } = makeModel({ baseUrl: fake.url, timeouts: { idleMs: 100 } });
    fake.behave({ delayBetweenChunksMs: 1000 });
    const got: ChatStreamEvent[] = [];
    const err = await failure((async () => { for await (const e of await model.chat!.stream!(req(), call())) got.push(e); })());
    expect([err.kind, err.retryable]).toEqual(["stream_interrupted", false]);
    expect(err.message).toContain("idle (100 ms) timeout");
    expect(got.length).toBe(1);
  });

  test("a garbage line → 'malformed'", async () => {
    const { model } = makeModel({ baseUrl: fake.url });
    fake.behave({ garbageAfterChunks: 2 });
    expect((await failure(collect(await model.chat!.stream!(req(), call())))).kind).toBe("malformed");
  });

  test("a stream that ends without [DONE] → 'stream_interrupted' at the end", async () => {
    const { model } = makeModel({ baseUrl: fake.url });
    fake.behave({ truncateAfterChunks: 3 });
    const got: ChatStreamEvent[] = [];
    const err = await failure((async () => { for await (const e of await model.chat!.stream!(req(), call())) got.push(e); })());
    expect([err.kind, err.retryable]).toEqual(["stream_interrupted", false]);
    expect(got.length).toBe(3);
  });

  test("a dropped connection mid-stream → 'stream_interrupted', not retryable", async () => {
    const { model } = makeModel({ baseUrl: fake.url });
    fake.behave({ dropAfterChunks: 2 });
    const err = await failure(collect(await model.chat!.stream!(req(), call())));
    expect([err.kind, err.retryable]).toEqual(["stream_interrupted", false]);
  });

  test("aborting the signal mid-stream aborts the upstream at once", async () => {
    const { model } = makeModel({ baseUrl: fake.url });
    fake.behave({ delayBetweenChunksMs: 200 });
    const ac = new AbortController();
    const it = (await model.chat!.stream!(req(), testCall({ signal: ac.signal })))[Symbol.asyncIterator]();
    await it.next();
    const pending = it.next();
    const t = performance.now();
    ac.abort();
    const err = await pending.then(() => undefined, (e) => e);
    expect(err?.name).toBe("AbortError");
    const abort = await fake.waitForAbort();
    expect(abort.at - t).toBeLessThan(50);
    expect(fake.requests[0]!.aborted).toBe(true);
  });

  test("a consumer that stops iterating early aborts the upstream", async () => {
    const { model } = makeModel({ baseUrl: fake.url });
    fake.behave({ delayBetweenChunksMs: 200 });
    for await (const _ of await model.chat!.stream!(req(), call())) break;
    await fake.waitForAbort(undefined, 200);
  });
});

describe("embeddings", () => {
  test("not offered unless configured", () => {
    expect(makeModel({ baseUrl: fake.url }).model.embeddings).toBeUndefined();
  });

  test("float and base64 pass through, with usage", async () => {
    const { model } = makeModel({ baseUrl: fake.url, capabilities: ["embeddings"], upstreamModel: "emb" });
    expect(model.chat).toBeUndefined();
    expect(model.embeddings!.supportsDimensions).toBe(true);
    const f = await model.embeddings!.embed({ body: { model: "reelay-chat", input: ["hello world", "x"] }, inputs: ["hello world", "x"] }, call());
    expect(f.data[1]).toEqual({ index: 1, embedding: Array.from(fakeEmbedding("emb\u0000x", 8)) });
    expect(f.upstreamUsage).toEqual({ prompt_tokens: 3, total_tokens: 3 });
    const body = { model: "reelay-chat", input: "hello world", encoding_format: "base64" as const, dimensions: 4 };
    const b = await model.embeddings!.embed({ body, inputs: ["hello world"] }, call());
    const vec = fakeEmbedding("emb\u0000hello world", 4);
    expect(b.data[0]!.embedding).toBe(Buffer.from(vec.buffer).toString("base64"));
    expect(fake.requests[1]!.body).toEqual({ ...body, model: "emb" });
  });

  test("no usage from the upstream: none relayed (the host bills its own count)", async () => {
    const { model } = makeModel({ baseUrl: fake.url, capabilities: ["chat", "embeddings"] });
    fake.behave({ omitUsage: true });
    const r = await model.embeddings!.embed({ body: { model: "reelay-chat", input: ["hello world"] }, inputs: ["hello world"] }, call());
    expect([r.usage, r.upstreamUsage]).toEqual([undefined, undefined]);
  });
});
