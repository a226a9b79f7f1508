/** Chunk builders, the host's checks, error brands and the failure table's retry defaults. */
import { describe, expect, test } from "bun:test";
import {
  chatChunks, checkOptions, defaultRetryable, describeFailure, isMp4, isPluginError, PLUGIN_ERROR_BRAND, problemWithChatResult, problemWithHandle,
  problemWithPollResult, problemWithStreamEvent, problemWithUsage, readPluginError, Type, usageOf,
  chatUsageOfMessages, problemWithMessagesEvent, problemWithMessagesResult, problemWithTokenCount,
} from "../src/index.ts";
import { problemWithMessagesGrammar } from "../src/contract/index.ts";

describe("chatChunks", () => {
  test("every event carries its data and the same JSON; the usage chunk has choices: []", () => {
    const out = chatChunks({ model: "m", id: "chatcmpl-1", created: 7 });
    const events = [out.role(), out.delta("Hel"), out.delta("lo", { usage: { prompt_tokens: 3, completion_tokens: 1 } }), out.finish("stop"), out.usage({ prompt_tokens: 3, completion_tokens: 2 }), out.done()];
    for (const e of events) {
      expect(problemWithStreamEvent(e)).toBeNull();
      if (e.data !== "[DONE]") expect(JSON.parse(e.data)).toEqual(e.json);
    }
    expect(events[1]!.json).toEqual({ id: "chatcmpl-1", object: "chat.completion.chunk", created: 7, model: "m", choices: [{ index: 0, delta: { content: "Hel" }, finish_reason: null }] });
    expect(events[4]!.json).toMatchObject({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } });
    expect(problemWithChatResult({ completion: out.completion({ content: "Hello" }, "stop", { prompt_tokens: 3, completion_tokens: 2 }), usage: { prompt_tokens: 3, completion_tokens: 2 } })).toBeNull();
  });

  test("usage that is not integers ≥ 0 is refused where it is built", () => {
    expect(() => usageOf({ prompt_tokens: "3" as never, completion_tokens: 1 })).toThrow(RangeError);
    expect(() => usageOf({ prompt_tokens: 3, completion_tokens: -1 })).toThrow("usage.completion_tokens must be an integer ≥ 0, got -1");
  });
});

describe("the host's checks", () => {
  test("usage: integers ≥ 0 within the allowance", () => {
    expect(problemWithUsage({ prompt_tokens: 3, completion_tokens: 8 }, ["prompt_tokens", "completion_tokens"], { completion: 8 })).toBeNull();
    expect(problemWithUsage({ prompt_tokens: 3, completion_tokens: 9 }, ["prompt_tokens", "completion_tokens"], { completion: 8 })).toBe("usage.completion_tokens is 9, more than the 8 this request allows");
    expect(problemWithUsage({ prompt_tokens: 2.5 }, ["prompt_tokens"])).toBe("usage.prompt_tokens is 2.5, not an integer ≥ 0");
    expect(problemWithUsage("12", ["prompt_tokens"])).toBe('usage is "12", not an object');
  });

  test("usage: cache details are counts within the prompt", () => {
    const fields = ["prompt_tokens", "completion_tokens"] as const;
    expect(problemWithUsage({ prompt_tokens: 10, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 6, cache_write_tokens: 4 } }, fields)).toBeNull();
    expect(problemWithUsage({ prompt_tokens: 10, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 6, cache_write_tokens: 5 } }, fields)).toBe("usage.prompt_tokens_details counts 11 cache tokens, more than the 10 prompt tokens they are part of");
    expect(problemWithUsage({ prompt_tokens: 10, completion_tokens: 1, prompt_tokens_details: { cached_tokens: -1 } }, fields)).toBe("usage.prompt_tokens_details.cached_tokens is -1, not an integer ≥ 0");
  });

  test("Messages API results, events and counts", () => {
    const message = { id: "msg_1", type: "message", role: "assistant", content: [{ type: "text", text: "hi" }], model: "m", stop_reason: "end_turn", usage: { input_tokens: 1, output_tokens: 1 } };
    expect(problemWithMessagesResult({ message })).toBeNull();
    expect(problemWithMessagesResult({ message: { ...message, type: "chat.completion" } })).toContain('of type "chat.completion"');
    expect(problemWithMessagesResult({ message: { ...message, content: "hi" } })).toContain("not an array of content blocks");
    const ping = { event: "ping", data: '{"type":"ping"}', json: { type: "ping" } };
    expect(problemWithMessagesEvent(ping)).toBeNull();
    expect(problemWithMessagesEvent({ ...ping, event: "message_stop" })).toBe('a messages stream event named "message_stop" carries type "ping"');
    expect(problemWithMessagesEvent({ ...ping, event: "ping\ndata: x" })).toContain("names are like content_block_delta");
    expect(problemWithMessagesEvent({ ...ping, data: "ping" })).toContain("not JSON text");
    expect(problemWithTokenCount({ input_tokens: 12 })).toBeNull();
    expect(problemWithTokenCount({ input_tokens: "12" })).toContain('input_tokens "12"');
  });

  test("Anthropic usage in OpenAI's shape: every prompt token counted once, the cache named", () => {
    expect(chatUsageOfMessages({ input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 100, cache_creation_input_tokens: 20 }))
      .toEqual({ prompt_tokens: 130, completion_tokens: 5, total_tokens: 135, prompt_tokens_details: { cached_tokens: 100, cache_write_tokens: 20 } });
    expect(chatUsageOfMessages({ input_tokens: 10, output_tokens: 5, cache_read_input_tokens: null }))
      .toEqual({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 } });
    // what is not a count stays as it came, for the host to judge
    expect(chatUsageOfMessages({ input_tokens: "10", output_tokens: 5 })).toMatchObject({ prompt_tokens: "10", completion_tokens: 5 });
    expect(chatUsageOfMessages({ input_tokens: 10, output_tokens: 5, cache_read_input_tokens: -3 })).toMatchObject({ prompt_tokens: 10, prompt_tokens_details: { cached_tokens: -3 } });
  });

  test("the Messages stream grammar: the bugs other gateways shipped are caught", () => {
    const ev = (event: string, index?: number) => ({ event, json: { type: event, ...(index === undefined ? {} : { index }) } });
    const good = [ev("message_start"), ev("ping"), ev("content_block_start", 0), ev("content_block_delta", 0), ev("content_block_stop", 0), ev("content_block_start", 1), ev("content_block_delta", 1), ev("content_block_stop", 1), ev("message_delta"), ev("message_stop")];
    expect(problemWithMessagesGrammar(good)).toBeNull();
    // non-contiguous block indices (new-api#5483)
    expect(problemWithMessagesGrammar([...good.slice(0, 5), ev("content_block_start", 2), ...good.slice(6)])).toContain("block 2 starts where block 1 was due");
    // a doubled message_start (litellm#32357)
    expect(problemWithMessagesGrammar([ev("message_start"), ...good])).toBe("message_start is sent more than once");
    // a thinking delta inside another block / two blocks open at once (bifrost#4556)
    expect(problemWithMessagesGrammar([...good.slice(0, 3), ev("content_block_start", 1), ...good.slice(3)])).toContain("starts while block 0 is open");
    expect(problemWithMessagesGrammar([...good.slice(0, 5), ev("content_block_delta", 0), ...good.slice(5)])).toContain("a delta for block 0 while no block is open");
    expect(problemWithMessagesGrammar([...good.slice(0, 4), ev("message_delta"), ev("message_stop")])).toBe("message_delta while block 0 is still open");
    expect(problemWithMessagesGrammar(good.slice(0, -1))).toContain("not message_stop");
    expect(problemWithMessagesGrammar([...good.slice(0, -2), ev("message_stop")])).toContain("no message_delta");
  });

  test("an MP4 starts with a well-formed ftyp box", () => {
    const ftyp = Uint8Array.of(0, 0, 0, 24, 0x66, 0x74, 0x79, 0x70, 0x69, 0x73, 0x6f, 0x6d, 0, 0, 2, 0, 0x69, 0x73, 0x6f, 0x6d, 0x61, 0x76, 0x63, 0x31);
    expect(isMp4(ftyp)).toBe(true);
    expect(isMp4(new TextEncoder().encode("<html><body>gateway</body></html>"))).toBe(false);
    expect(isMp4(Uint8Array.of(0, 0, 1, 0, ...ftyp.subarray(4)))).toBe(false); // a box larger than the bytes
    expect(isMp4("ftyp")).toBe(false);
  });

  test("poll results: known states, progress 0–1, bytes or an http(s) URL, failures with a code; handles are strings", () => {
    expect(problemWithPollResult({ state: "running", progress: 0.4 })).toBeNull();
    expect(problemWithPollResult({ state: "running", progress: 40 })).toContain("progress is a fraction from 0 to 1");
    expect(problemWithPollResult({ state: "done" })).toContain('state "done"');
    expect(problemWithPollResult({ state: "succeeded", url: "ftp://x" })).toContain("neither mp4 bytes nor an http(s) url");
    expect(problemWithPollResult({ state: "failed", code: "content policy!", message: "x" })).toContain("a code is a short word");
    expect(problemWithHandle({ handle: 42 })).toContain("handle 42");
    expect(problemWithHandle({ handle: "x".repeat(2000) })).toContain("2000 characters");
  });
});

describe("errors", () => {
  test("the brand is a global symbol: a look-alike from another bundle is recognised, a plain Error is not", () => {
    expect(PLUGIN_ERROR_BRAND as symbol).toBe(Symbol.for("reelay.plugin-error"));
    const foreign = Object.assign(new Error("from elsewhere"), { [Symbol.for("reelay.plugin-error")]: true, kind: "timeout" });
    expect(isPluginError(foreign)).toBe(true);
    expect(isPluginError(new Error("x"))).toBe(false);
    expect(describeFailure(foreign).status).toBe(504);
  });

  test("fields from an older or broken plugin are sanitised", () => {
    const odd = { [Symbol.for("reelay.plugin-error")]: true, kind: "quantum", status: 99, code: 5, retryable: "yes", message: "" };
    expect(readPluginError(odd)).toEqual({ kind: "failed", message: "the plugin failed (failed)", status: undefined, code: "unknown_error_kind:quantum", param: null, retryable: false, retryAfterSeconds: undefined });
  });

  test("retried by default: refused/reset, timeouts, 5xx and 429, overloaded; nothing else", () => {
    expect([defaultRetryable("connect"), defaultRetryable("timeout"), defaultRetryable("overloaded"), defaultRetryable("upstream_http", 503), defaultRetryable("upstream_http", 429)]).toEqual([true, true, true, true, true]);
    expect([defaultRetryable("upstream_http", 401), defaultRetryable("malformed"), defaultRetryable("failed"), defaultRetryable("invalid_request"), defaultRetryable("stream_interrupted")]).toEqual([false, false, false, false, false]);
  });
});

test("checkOptions: defaults filled in, each problem with its option", () => {
  const schema = Type.Object({ url: Type.String(), n: Type.Integer({ minimum: 1, default: 3 }), mode: Type.Union([Type.Literal("a"), Type.Literal("b")], { default: "a" }) }, { additionalProperties: false });
  expect(checkOptions(schema, { url: "x" })).toEqual({ options: { url: "x", n: 3, mode: "a" }, problems: [] });
  expect(checkOptions(schema, { n: 0, mode: "c", extra: 1 }).problems).toEqual([
    { option: "url", message: "is required" },
    { option: "extra", message: "unknown option" },
    { option: "n", message: "expected integer to be greater or equal to 1 (got 0)" },
    { option: "mode", message: 'must be one of "a", "b" (got "c")' },
  ]);
});
