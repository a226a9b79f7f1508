/**
 * Chat answers as Anthropic messages: a chat.completion's first choice becomes content blocks
 * (`thinking` for the upstream's reasoning — `reasoning_content` as vLLM and DeepSeek send it, or
 * `reasoning` — then `text`, then one `tool_use` per tool call with its arguments parsed), its
 * finish_reason the stop reason, and `usage` what the request was billed for.
 */
import type { BilledChat } from "../chat-bridge/complete.ts";
import { randomId } from "../../ids.ts";

export interface MessageContext {
  id: string;
  /** the client's stop sequences: a stop on one of them is `stop_sequence`, not `end_turn` */
  stopSequences: string[];
}

export const newMessageId = () => randomId("msg", 24);
export const newToolUseId = () => randomId("toolu", 24);

export interface MessageUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  output_tokens: number;
}

/**
 * Usage as billed, as the usage row records it. Anthropic counts cache reads and writes apart from
 * `input_tokens`, so the prompt charged is `input_tokens + cache_read_input_tokens +
 * cache_creation_input_tokens`: the reads billed at the model's cache-read price, the writes at its
 * cache-write price, the rest at its input price (never negative: billing keeps the two within the
 * prompt).
 */
export function usageOf(billed: BilledChat): MessageUsage {
  return {
    input_tokens: billed.promptTokens - billed.cachedTokens - billed.cacheWriteTokens,
    cache_creation_input_tokens: billed.cacheWriteTokens,
    cache_read_input_tokens: billed.cachedTokens,
    output_tokens: billed.completionTokens,
  };
}

/** The upstream's reasoning text of a message or a delta, whichever field it uses. */
export function reasoningOf(m: Record<string, any> | undefined): string {
  if (typeof m?.reasoning_content === "string") return m.reasoning_content;
  if (typeof m?.reasoning === "string") return m.reasoning;
  return "";
}

/**
 * finish_reason → stop_reason. A stop on one of the client's stop sequences is told apart only
 * when the upstream says which (vLLM's `stop_reason` on the choice); other servers say "stop".
 */
export function stopReasonOf(choice: Record<string, any> | undefined, ctx: MessageContext, facts: { toolCalls: boolean; refused: boolean }): { stop_reason: string; stop_sequence: string | null } {
  const finish = choice?.finish_reason;
  if (facts.refused || finish === "content_filter") return { stop_reason: "refusal", stop_sequence: null };
  if (finish === "length") return { stop_reason: "max_tokens", stop_sequence: null };
  if (finish === "tool_calls" || finish === "function_call" || facts.toolCalls) return { stop_reason: "tool_use", stop_sequence: null };
  const matched = choice?.stop_reason;
  if (typeof matched === "string" && ctx.stopSequences.includes(matched)) return { stop_reason: "stop_sequence", stop_sequence: matched };
  return { stop_reason: "end_turn", stop_sequence: null };
}

/**
 * A tool call's arguments as the `input` object. Arguments that are not a JSON object (an upstream
 * that broke them) are kept, never replaced by `{}`: `{"arguments": "<the text as received>"}`.
 */
export function toolInput(args: unknown): Record<string, unknown> {
  if (typeof args !== "string" || args.trim() === "") return {};
  try {
    const parsed = JSON.parse(args);
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return parsed;
  } catch {
    // kept as text below
  }
  return { arguments: args };
}

/** The message for a non-streamed chat.completion. */
export function messageFromCompletion(ctx: MessageContext, completion: any, billed: BilledChat) {
  const choice = Array.isArray(completion?.choices) ? completion.choices[0] : undefined;
  const message = choice?.message ?? {};
  const content: Record<string, unknown>[] = [];
  const reasoning = reasoningOf(message);
  if (reasoning !== "") content.push({ type: "thinking", thinking: reasoning, signature: "" });
  const refusal = typeof message.refusal === "string" && message.refusal !== "" ? message.refusal : null;
  const text = (typeof message.content === "string" ? message.content : "") + (refusal ?? "");
  if (text !== "") content.push({ type: "text", text });
  const calls: any[] = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  for (const tc of calls) {
    content.push({
      type: "tool_use", id: typeof tc?.id === "string" && tc.id !== "" ? tc.id : newToolUseId(),
      name: String(tc?.function?.name ?? ""), input: toolInput(tc?.function?.arguments),
    });
  }
  return {
    id: ctx.id,
    type: "message" as const,
    role: "assistant" as const,
    model: String(completion?.model ?? ""),
    content,
    ...stopReasonOf(choice, ctx, { toolCalls: calls.length > 0, refused: refusal !== null }),
    usage: usageOf(billed),
  };
}
