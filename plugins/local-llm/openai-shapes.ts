/** The OpenAI chat completion objects the plugin answers with (non-streamed and streamed). */
import type { ChatStreamEvent, TokenUsage } from "../../src/plugin-sdk/index.ts";
import type { FinishReason } from "./generate.ts";

export interface Answer {
  id: string;
  created: number;
  model: string;
}

export function newAnswer(model: string): Answer {
  return { id: `chatcmpl-${crypto.randomUUID().replaceAll("-", "")}`, created: Math.floor(Date.now() / 1000), model };
}

export function usageOf(promptTokens: number, completionTokens: number): Required<TokenUsage> {
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
}

export function completionObject(a: Answer, content: string, finishReason: FinishReason, usage: TokenUsage) {
  return {
    id: a.id,
    object: "chat.completion",
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
export function chunkEvent(a: Answer, delta: { role?: "assistant"; content?: string }, finishReason: FinishReason | null, usage: TokenUsage): ChatStreamEvent {
  const json = {
    id: a.id,
    object: "chat.completion.chunk",
    created: a.created,
    model: a.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    usage,
  };
  return { data: JSON.stringify(json), json };
}

/** The final usage chunk (`choices: []`); the host passes it on only when `stream_options.include_usage` is set. */
export function usageEvent(a: Answer, usage: TokenUsage): ChatStreamEvent {
  const json = { id: a.id, object: "chat.completion.chunk", created: a.created, model: a.model, choices: [], usage };
  return { data: JSON.stringify(json), json };
}

export const DONE_EVENT: ChatStreamEvent = { data: "[DONE]" };
