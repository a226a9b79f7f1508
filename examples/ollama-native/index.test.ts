/**
 * The plugin against a fake Ollama (fake-ollama.ts): the SDK's contract suite with every failure
 * scenario, and what is particular to Ollama (request mapping, tool calls, a cached prompt's
 * missing count, an error line mid-stream). Needs only @reelay/plugin-sdk: it runs the same inside
 * reelay's tree and from a copy built against the packed SDK.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { isPluginError, type ChatCompletionRequest, type ChatStreamEvent, type ModelInstance } from "@reelay/plugin-sdk";
import { runPluginContract, type FailureScenarios } from "@reelay/plugin-sdk/contract";
import { testCall, testPluginContext } from "@reelay/plugin-sdk/testing";
import { REPLY, startFakeOllama, type FakeOllama } from "./fake-ollama.ts";
import plugin from "./index.ts";

let ollama: FakeOllama;
let stopped = false;
const failures: FailureScenarios = {
  httpStatus: (status) => ollama.behave({ status }),
  unreachable: async () => {
    stopped = true;
    await ollama.stop();
  },
  hang: () => ollama.behave({ hang: true }),
  shortTimeouts: { timeouts: { connectMs: 300, totalMs: 300 } },
  garbage: () => ollama.behave({ garbage: true }),
  breakMidStream: () => ollama.behave({ dropAfterLines: 2 }),
  slowStream: () => ollama.behave({ delayMs: 150 }),
  sawAbort: () => ollama.aborts > 0,
  reset: async () => {
    if (stopped) ollama = await startFakeOllama(ollama.port);
    stopped = false;
    ollama.behave({});
    ollama.aborts = 0;
  },
};

runPluginContract("ollama-native", () => plugin, {
  capabilities: ["chat", "embeddings"],
  setup: async () => { ollama = await startFakeOllama(); },
  teardown: () => ollama.stop(),
  options: () => ({ baseUrl: ollama.url, model: "llama3.2:3b", capabilities: ["chat", "embeddings"] }),
  failures,
});

describe("Ollama specifics", () => {
  let fake: FakeOllama;
  let model: ModelInstance;
  beforeAll(async () => {
    fake = await startFakeOllama();
    model = await plugin.create(testPluginContext({ baseUrl: fake.url, model: "llama3.2:3b", keepAlive: "10m" }, { plugin, modelId: "local-llama" }));
  });
  afterAll(() => fake.stop());
  const body = (over: Partial<ChatCompletionRequest> = {}): ChatCompletionRequest => ({ model: "local-llama", messages: [{ role: "user", content: "Say hello" }], ...over });
  const collect = async (b: ChatCompletionRequest) => {
    const out: ChatStreamEvent[] = [];
    for await (const e of await model.chat!.stream!(b, testCall())) out.push(e);
    return out;
  };

  test("the OpenAI request becomes Ollama's: model name, num_predict, options, format, images, keep_alive", async () => {
    fake.behave({});
    const image = "data:image/png;base64,iVBORw0KGgo=";
    await model.chat!.complete(body({
      max_tokens: 4, temperature: 0.2, seed: 7, stop: "\n", response_format: { type: "json_object" },
      messages: [{ role: "developer", content: "Be brief." }, { role: "user", content: [{ type: "text", text: "What is this?" }, { type: "image_url", image_url: { url: image } }] }],
    }), testCall());
    expect(fake.requests.at(-1)!.body).toEqual({
      model: "llama3.2:3b", stream: false, keep_alive: "10m", format: "json",
      options: { num_predict: 4, temperature: 0.2, seed: 7, stop: ["\n"] },
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "What is this?", images: ["iVBORw0KGgo="] }],
    });
  });

  test("a completion in OpenAI's shape, under reelay's model id, Ollama's counts relayed for billing", async () => {
    const r = await model.chat!.complete(body({ max_tokens: 5 }), testCall());
    expect(r.completion).toMatchObject({ object: "chat.completion", model: "local-llama", choices: [{ index: 0, message: { role: "assistant", content: REPLY.slice(0, 5).join("") }, finish_reason: "length" }] });
    expect(r.upstreamUsage).toEqual({ prompt_tokens: 6, completion_tokens: 5 });
  });

  test("streamed: one chunk per NDJSON line, then finish, usage (choices: []), [DONE]", async () => {
    const events = await collect(body({ stream: true, max_tokens: 3 }));
    expect(events.map((e) => e.json?.choices[0]?.delta.content ?? null)).toEqual(["", ...REPLY.slice(0, 3), null, null, null]);
    expect(events.at(-3)!.json!.choices[0]!.finish_reason).toBe("length");
    expect(events.at(-2)!.json).toMatchObject({ choices: [], usage: { prompt_tokens: 6, completion_tokens: 3, total_tokens: 9 } });
    expect(events.at(-1)).toEqual({ data: "[DONE]" });
  });

  test("a cached prompt (no prompt_eval_count): no usage returned, reelay counts instead of billing 0", async () => {
    fake.behave({ noPromptCount: true });
    expect((await model.chat!.complete(body(), testCall())).upstreamUsage).toBeUndefined();
    expect((await collect(body({ stream: true }))).some((e) => e.json?.usage)).toBe(false);
    fake.behave({});
  });

  test("tool calls come back as OpenAI tool_calls with JSON-text arguments", async () => {
    fake.behave({ toolCall: { name: "weather", arguments: { city: "Oslo" } } });
    const r = await model.chat!.complete(body({ tools: [{ type: "function", function: { name: "weather", parameters: { type: "object" } } }] }), testCall());
    expect(r.completion.choices[0]).toMatchObject({ finish_reason: "tool_calls", message: { tool_calls: [{ type: "function", function: { name: "weather", arguments: '{"city":"Oslo"}' } }] } });
    const events = await collect(body({ stream: true }));
    expect(events.find((e) => e.json?.choices[0]?.delta.tool_calls)!.json!.choices[0]!.delta.tool_calls![0]).toMatchObject({ index: 0, function: { name: "weather", arguments: '{"city":"Oslo"}' } });
    fake.behave({});
  });

  test("an error line mid-stream, or a stream without its final line, is stream_interrupted", async () => {
    for (const b of [{ errorAfterLines: 2 }, { truncateAfterLines: 2 }]) {
      fake.behave(b);
      const err = await collect(body({ stream: true })).then(() => null, (e) => e);
      expect(isPluginError(err) && [err.kind, err.retryable]).toEqual(["stream_interrupted", false]);
    }
    fake.behave({});
  });

  test("what Ollama cannot do is a 400 naming the field, before anything is sent", async () => {
    const sent = fake.requests.length;
    for (const [over, param] of [[{ n: 2 }, "n"], [{ logprobs: true }, "logprobs"], [{ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://example.com/cat.png" } }] }] }, "messages[0].content"]] as const) {
      const err = await model.chat!.complete(body(over as Partial<ChatCompletionRequest>), testCall()).catch((e) => e);
      expect([err.kind, err.param]).toEqual(["invalid_request", param]);
    }
    expect(fake.requests.length).toBe(sent);
  });
});
