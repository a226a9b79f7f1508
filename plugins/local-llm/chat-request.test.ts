import { describe, expect, test } from "bun:test";
import { PluginError } from "@reelay/plugin-sdk";
import { parseChatRequest } from "./chat-request.ts";

const messages = [{ role: "user", content: "Once upon a time" }];
const refusal = (body: Record<string, unknown>) => {
  try {
    parseChatRequest({ messages, ...body });
  } catch (e) {
    expect(e).toBeInstanceOf(PluginError);
    const err = e as PluginError;
    return { kind: err.kind, param: err.param, code: err.code, message: err.message };
  }
  throw new Error(`accepted ${JSON.stringify(body)}`);
};

describe("what a local model accepts", () => {
  test("OpenAI's sampling defaults, the smaller output limit, stop as a list", () => {
    const p = parseChatRequest({ messages, max_tokens: 50, max_completion_tokens: 20, stop: "The end", seed: 7 });
    expect(p).toEqual({
      messages: [{ role: "user", content: "Once upon a time" }],
      maxTokens: 20,
      stop: ["The end"],
      sampling: { temperature: 1, topP: 1, topK: 0, minP: 0, seed: 7, penalties: null },
    });
  });

  test("seeds are reduced to llama.cpp's 32 bits; no seed draws one", () => {
    expect(parseChatRequest({ messages, seed: -1 }).sampling.seed).toBe(2 ** 32 - 1);
    expect(parseChatRequest({ messages, seed: 2 ** 40 + 5 }).sampling.seed).toBe(5);
    expect(parseChatRequest({ messages }, () => 0.5).sampling.seed).toBe(2 ** 31);
  });

  test("text parts are joined, developer is a system message, assistant content may be null", () => {
    const p = parseChatRequest({
      messages: [
        { role: "developer", content: "Tell stories." },
        { role: "user", content: [{ type: "text", text: "Once " }, { type: "text", text: "upon" }] },
        { role: "assistant", content: null },
      ],
    });
    expect(p.messages).toEqual([{ role: "system", content: "Tell stories." }, { role: "user", content: "Once upon" }, { role: "assistant", content: "" }]);
  });

  test("penalties and llama.cpp's extensions reach the sampler; top_p 0 is greedy", () => {
    const p = parseChatRequest({ messages, frequency_penalty: 0.5, presence_penalty: -1, repeat_penalty: 1.1, top_k: 40, min_p: 0.05, top_p: 0 });
    expect(p.sampling).toMatchObject({ temperature: 0, topK: 40, minP: 0.05, penalties: { frequency: 0.5, presence: -1, repeat: 1.1 } });
  });

  test("parameters that change nothing locally are accepted", () => {
    expect(() => parseChatRequest({ messages, user: "u1", metadata: { a: "b" }, store: false, n: 1, logprobs: false, tools: [], response_format: { type: "text" }, tool_choice: "none", stream_options: { include_usage: true } })).not.toThrow();
  });

  test("what cannot be honoured is a 400 naming the parameter", () => {
    expect(refusal({ tools: [{ type: "function", function: { name: "f" } }] })).toMatchObject({ kind: "invalid_request", param: "tools", code: "unsupported_parameter" });
    expect(refusal({ response_format: { type: "json_object" } })).toMatchObject({ param: "response_format", code: "unsupported_parameter" });
    expect(refusal({ n: 2 })).toMatchObject({ param: "n" });
    expect(refusal({ logprobs: true })).toMatchObject({ param: "logprobs" });
    expect(refusal({ top_logprobs: 3 })).toMatchObject({ param: "top_logprobs" });
    expect(refusal({ tool_choice: "required" })).toMatchObject({ param: "tool_choice" });
    expect(refusal({ reasoning_effort: "low" })).toMatchObject({ param: "reasoning_effort", message: "Unrecognized request argument supplied: reasoning_effort" });
    expect(refusal({ messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://x/y.png" } }] }] })).toMatchObject({ param: "messages[0].content[0]", code: "unsupported_parameter" });
    expect(refusal({ messages: [{ role: "tool", content: "42", tool_call_id: "c" }] })).toMatchObject({ param: "messages[0].role" });
    expect(refusal({ messages: [{ role: "wizard", content: "hi" }] })).toMatchObject({ param: "messages[0].role" });
  });

  test("out-of-range values are a 400 naming the parameter", () => {
    expect(refusal({ temperature: 3 })).toMatchObject({ param: "temperature", message: "'temperature' must be a number from 0 to 2." });
    expect(refusal({ top_p: -0.1 })).toMatchObject({ param: "top_p" });
    expect(refusal({ seed: 1.5 })).toMatchObject({ param: "seed" });
    expect(refusal({ stop: ["a", "b", "c", "d", "e"] })).toMatchObject({ param: "stop" });
    expect(refusal({ stop: [1] })).toMatchObject({ param: "stop" });
    expect(refusal({ top_k: 2.5 })).toMatchObject({ param: "top_k" });
  });
});
