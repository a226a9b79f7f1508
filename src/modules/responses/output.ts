/**
 * Chat answers as Responses API objects: a chat.completion's message becomes output items
 * (`reasoning` for reasoning_content, sealed into `encrypted_content` when the request included
 * it; `message` with `output_text`; one `function_call` — or `custom_tool_call` — per tool call,
 * named back as the client offered the tool, tools.ts), finish_reason `length` becomes status
 * `incomplete` with `incomplete_details.reason: "max_output_tokens"`, and `usage` is what the
 * request was billed for.
 */
import type { BilledChat } from "../chat-bridge/complete.ts";
import { itemId, type ItemPrefix } from "./ids.ts";
import type { ResponsesRequest } from "./model.ts";
import type { ReasoningField } from "./reasoning-seal.ts";
import { callItem, type ToolTarget } from "./tools.ts";

export interface ResponseContext {
  id: string;
  stem: string;
  /** unix seconds */
  createdAt: number;
  /** reelay's model id */
  model: string;
  body: ResponsesRequest & Record<string, unknown>;
  store: boolean;
  /** chat function name → the tool the client offered */
  tools: Map<string, ToolTarget>;
  /** seals reasoning text (and the field it came in) into `encrypted_content`; null when the request did not include it */
  sealReasoning: ((text: string, field: ReasoningField) => string) | null;
}

export type Status = "in_progress" | "completed" | "incomplete" | "failed";
export type OutputItem = Record<string, any> & { id: string; type: string };

const encoder = new TextEncoder();

/** The response object around `output` (the same fields in every event and in GET /v1/responses/{id}). */
export function responseObject(ctx: ResponseContext, status: Status, output: OutputItem[], extra: { usage?: object | null; incomplete?: string | null; error?: { code: string | null; message: string } | null } = {}) {
  const b = ctx.body;
  return {
    id: ctx.id,
    object: "response" as const,
    created_at: ctx.createdAt,
    status,
    background: false,
    error: extra.error ?? null,
    incomplete_details: extra.incomplete ? { reason: extra.incomplete } : null,
    instructions: b.instructions ?? null,
    max_output_tokens: b.max_output_tokens ?? null,
    max_tool_calls: (b.max_tool_calls as number | undefined) ?? null,
    model: ctx.model,
    output,
    output_text: outputText(output),
    parallel_tool_calls: b.parallel_tool_calls ?? true,
    previous_response_id: b.previous_response_id ?? null,
    reasoning: { effort: b.reasoning?.effort ?? null, summary: (b.reasoning as { summary?: string | null } | null | undefined)?.summary ?? null },
    service_tier: (b.service_tier as string | undefined) ?? null,
    store: ctx.store,
    temperature: b.temperature ?? null,
    text: { format: b.text?.format ?? { type: "text" } },
    tool_choice: b.tool_choice ?? "auto",
    tools: b.tools ?? [],
    top_logprobs: b.top_logprobs ?? null,
    top_p: b.top_p ?? null,
    truncation: "disabled",
    usage: extra.usage ?? null,
    user: (b.user as string | undefined) ?? null,
    metadata: b.metadata ?? {},
  };
}
export type ResponseBody = ReturnType<typeof responseObject>;

export function outputText(output: OutputItem[]): string {
  let text = "";
  for (const item of output) if (item.type === "message") for (const part of item.content ?? []) if (part.type === "output_text") text += part.text;
  return text;
}

/**
 * Responses usage: the counts billed, as the usage row records them — `cached_tokens` the prompt
 * tokens billed at the cache-read price (and `cache_write_tokens`, when some were billed at the
 * cache-write price) — with the upstream's reasoning token detail when it sent one.
 */
export function usageOf(billed: BilledChat, upstream: Record<string, any> | undefined) {
  const reasoning = upstream?.completion_tokens_details?.reasoning_tokens;
  const int = (v: unknown, max: number) => (Number.isSafeInteger(v) && (v as number) >= 0 ? Math.min(v as number, max) : 0);
  return {
    input_tokens: billed.promptTokens,
    input_tokens_details: { cached_tokens: billed.cachedTokens, ...(billed.cacheWriteTokens ? { cache_write_tokens: billed.cacheWriteTokens } : {}) },
    output_tokens: billed.completionTokens,
    output_tokens_details: { reasoning_tokens: int(reasoning, billed.completionTokens) },
    total_tokens: billed.promptTokens + billed.completionTokens,
  };
}

/** finish_reason → why the response is incomplete (null: it is complete) */
export function incompleteReason(finish: unknown): string | null {
  if (finish === "length") return "max_output_tokens";
  if (finish === "content_filter") return "content_filter";
  return null;
}

/** Chat token log probabilities in the Responses shape (which requires `bytes`). */
export function logprobsOf(chat: unknown): unknown[] {
  const withBytes = (l: any) => ({ token: String(l?.token ?? ""), logprob: Number(l?.logprob ?? 0), bytes: Array.isArray(l?.bytes) ? l.bytes : Array.from(encoder.encode(String(l?.token ?? ""))) });
  const content = (chat as { content?: unknown } | null | undefined)?.content;
  return Array.isArray(content) ? content.map((l) => ({ ...withBytes(l), top_logprobs: Array.isArray(l?.top_logprobs) ? l.top_logprobs.map(withBytes) : [] })) : [];
}

/** The output items of a (non-streamed) chat.completion's first choice. */
export function outputFromCompletion(ctx: ResponseContext, completion: any): { output: OutputItem[]; incomplete: string | null } {
  const choice = Array.isArray(completion?.choices) ? completion.choices[0] : undefined;
  const message = choice?.message ?? {};
  const incomplete = incompleteReason(choice?.finish_reason);
  const output: OutputItem[] = [];
  const next = (prefix: ItemPrefix) => itemId(prefix, ctx.stem, "o", output.length);
  const reasoning = reasoningOf(message);
  if (reasoning) output.push(reasoningItem(ctx, next("rs"), reasoning.text, reasoning.field));
  const toolCalls: any[] = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  const text = typeof message.content === "string" ? message.content : "";
  const refusal = typeof message.refusal === "string" && message.refusal !== "" ? message.refusal : null;
  if (text !== "" || refusal !== null || toolCalls.length === 0) {
    const content: Record<string, unknown>[] = [];
    if (text !== "" || refusal === null) content.push({ type: "output_text", text, annotations: [], logprobs: logprobsOf(choice?.logprobs) });
    if (refusal !== null) content.push({ type: "refusal", refusal });
    output.push({ id: next("msg"), type: "message", status: incomplete ? "incomplete" : "completed", role: "assistant", content });
  }
  for (const tc of toolCalls) {
    const index = output.length;
    const item = callItem(ctx.tools, String(tc?.function?.name ?? ""), typeof tc?.function?.arguments === "string" ? tc.function.arguments : "");
    output.push({
      id: next(item.type === "custom_tool_call" ? "ctc" : "fc"), ...item, status: "completed", call_id: typeof tc?.id === "string" && tc.id ? tc.id : `call_${ctx.stem}${index}`,
    } as OutputItem);
  }
  return { output, incomplete };
}

/** A chat message's (or delta's) reasoning: `reasoning_content` (DeepSeek, vLLM's parsers), or `reasoning` (vLLM ≥ 0.10, Ollama, OpenRouter). */
export function reasoningOf(m: { reasoning_content?: unknown; reasoning?: unknown } | null | undefined): { text: string; field: ReasoningField } | null {
  if (typeof m?.reasoning_content === "string" && m.reasoning_content !== "") return { text: m.reasoning_content, field: "reasoning_content" };
  if (typeof m?.reasoning === "string" && m.reasoning !== "") return { text: m.reasoning, field: "reasoning" };
  return null;
}

/** A finished reasoning item: the text, and the text sealed when the request included `reasoning.encrypted_content`. */
export function reasoningItem(ctx: ResponseContext, id: string, text: string, field: ReasoningField): OutputItem {
  return {
    id, type: "reasoning", summary: [], content: [{ type: "reasoning_text", text }],
    ...(ctx.sealReasoning ? { encrypted_content: ctx.sealReasoning(text, field) } : {}),
  };
}
