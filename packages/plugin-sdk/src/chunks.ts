/**
 * OpenAI chat objects for plugins whose backend speaks another format (Ollama, a local model):
 *
 *   const out = chatChunks({ model: ctx.modelId });
 *   yield out.role(); yield out.delta("Hel"); yield out.delta("lo");
 *   yield out.finish("stop"); yield out.usage({ prompt_tokens: 9, completion_tokens: 2 }); yield out.done();
 *
 * Every event carries both `data` (the text relayed) and `json`, as the host requires. The usage
 * chunk has `choices: []`, which is what lets the host hide it from clients that did not ask for
 * `stream_options.include_usage`.
 */
import type { ChatStreamEvent, TokenUsage } from "./capabilities.ts";
import type { ChatChunkDelta, ChatChunkToolCall, ChatCompletion, ChatCompletionChunk, ChatCompletionUsage, ChatFinishReason, ChatToolCall } from "./openai-chat.ts";

export const DONE_EVENT: ChatStreamEvent = { data: "[DONE]" };

/** `{prompt_tokens, completion_tokens, total_tokens}`; throws RangeError unless both are integers ≥ 0. */
export function usageOf(u: TokenUsage): ChatCompletionUsage {
  for (const k of ["prompt_tokens", "completion_tokens"] as const) {
    if (!Number.isSafeInteger(u[k]) || u[k] < 0) throw new RangeError(`usage.${k} must be an integer ≥ 0, got ${JSON.stringify(u[k])}`);
  }
  return { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.prompt_tokens + u.completion_tokens };
}

export function chunkEvent(json: ChatCompletionChunk): ChatStreamEvent {
  return { data: JSON.stringify(json), json };
}

export interface ChunkOptions {
  /** choice index (n > 1) */
  index?: number;
  /** running usage on this chunk (vLLM's continuous_usage_stats): bills a stream the client abandons in your own tokens */
  usage?: TokenUsage;
}

export function chatChunks(init: { model: string; id?: string; created?: number }) {
  const id = init.id ?? `chatcmpl-${crypto.randomUUID().replaceAll("-", "")}`;
  const created = init.created ?? Math.floor(Date.now() / 1000);
  const head = { id, object: "chat.completion.chunk" as const, created, model: init.model };
  const choice = (delta: ChatChunkDelta, finish: ChatFinishReason | null, o: ChunkOptions = {}) =>
    chunkEvent({ ...head, choices: [{ index: o.index ?? 0, delta, finish_reason: finish }], ...(o.usage ? { usage: usageOf(o.usage) } : {}) });
  return {
    id,
    created,
    /** the opening chunk: role assistant, empty content */
    role: (o?: ChunkOptions) => choice({ role: "assistant", content: "" }, null, o),
    /** a piece of the answer */
    delta: (content: string, o?: ChunkOptions) => choice({ content }, null, o),
    /** a piece of a tool call (its `index` numbers the call within the choice) */
    toolCall: (call: ChatChunkToolCall, o?: ChunkOptions) => choice({ tool_calls: [call] }, null, o),
    /** the end of a choice */
    finish: (reason: ChatFinishReason, o?: ChunkOptions) => choice({}, reason, o),
    /** the last chunk before [DONE]: the usage to bill, `choices: []` */
    usage: (u: TokenUsage) => chunkEvent({ ...head, choices: [], usage: usageOf(u) }),
    done: () => DONE_EVENT,
    /** the same answer as a non-streamed completion */
    completion: (message: { content: string | null; tool_calls?: ChatToolCall[] }, finish: ChatFinishReason, usage?: TokenUsage): ChatCompletion => ({
      id,
      object: "chat.completion",
      created,
      model: init.model,
      choices: [{ index: 0, message: { role: "assistant", content: message.content, ...(message.tool_calls ? { tool_calls: message.tool_calls } : {}) }, finish_reason: finish, logprobs: null }],
      ...(usage ? { usage: usageOf(usage) } : {}),
    }),
  };
}
