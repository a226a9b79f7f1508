/** The OpenAI chat completion objects the plugin answers with (non-streamed and streamed). */
import { chunkEvent as sdkChunkEvent, DONE_EVENT, type ChatCompletion, type ChatCompletionUsage, type ChatStreamEvent } from "@reelay/plugin-sdk";
import type { FinishReason } from "./generate.ts";

export interface Answer {
  id: string;
  created: number;
  model: string;
}

export function newAnswer(model: string): Answer {
  return { id: `chatcmpl-${crypto.randomUUID().replaceAll("-", "")}`, created: Math.floor(Date.now() / 1000), model };
}

export function usageOf(promptTokens: number, completionTokens: number): ChatCompletionUsage {
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
}

export function completionObject(a: Answer, content: string, finishReason: FinishReason, usage: ChatCompletionUsage): ChatCompletion {
  return {
    id: a.id,
    object: "chat.completion" as const,
    created: a.created,
    model: a.model,
    choices: [{ index: 0, message: { role: "assistant", content, refusal: null }, logprobs: null, finish_reason: finishReason }],
    usage,
  };
}

/**
 * One `chat.completion.chunk`. Every chunk carries the running usage (like vLLM's
 * continuous_usage_stats): the host bills a disconnected stream on the count of the last chunk it
 * delivered, counted by the model's own tokenizer, and hides it from clients that did not ask.
 */
export function chunkEvent(a: Answer, delta: { role?: "assistant"; content?: string }, finishReason: FinishReason | null, usage: ChatCompletionUsage): ChatStreamEvent {
  return sdkChunkEvent({ id: a.id, object: "chat.completion.chunk", created: a.created, model: a.model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }], usage });
}

/** The final usage chunk (`choices: []`); the host passes it on only when `stream_options.include_usage` is set. */
export function usageEvent(a: Answer, usage: ChatCompletionUsage): ChatStreamEvent {
  return sdkChunkEvent({ id: a.id, object: "chat.completion.chunk", created: a.created, model: a.model, choices: [], usage });
}

export { DONE_EVENT };
