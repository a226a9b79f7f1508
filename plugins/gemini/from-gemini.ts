/**
 * Gemini answers → OpenAI chat answers.
 *
 * - text parts → `content`; `thought: true` parts → `reasoning_content`; functionCall parts →
 *   `tool_calls` (id: Gemini's when it gives one, else a fresh one; its thoughtSignature in
 *   `extra_content.google.thought_signature`, which a client sends back with the call)
 * - finishReason: STOP → stop (tool_calls when the answer calls a function), MAX_TOKENS → length,
 *   SAFETY / RECITATION / BLOCKLIST / PROHIBITED_CONTENT / SPII / IMAGE_SAFETY → content_filter;
 *   a prompt blocked outright (promptFeedback.blockReason, no candidate) → an empty answer with
 *   `refusal` naming the reason and finish_reason content_filter, billed for its prompt
 * - usageMetadata → usage: prompt_tokens = promptTokenCount (+ toolUsePromptTokenCount),
 *   cachedContentTokenCount → prompt_tokens_details.cached_tokens, completion_tokens =
 *   candidatesTokenCount + thoughtsTokenCount (thinking is billed as output), the thoughts also
 *   in completion_tokens_details.reasoning_tokens
 * Streams: one chat chunk per part as it arrives; the finish chunk, the usage chunk and [DONE]
 * when the body ends after a chunk with a finishReason (Gemini has no end marker).
 */
import { chatChunks, chunkEvent, PluginError, type ChatCompletion, type ChatChunkToolCall, type ChatCompletionChunk, type ChatFinishReason, type ChatStreamEvent } from "@reelay/plugin-sdk";
import type { Part } from "./to-gemini.ts";

interface Candidate { content?: { parts?: Part[] }; finishReason?: string }
export interface GenerateResponse {
  candidates?: Candidate[];
  promptFeedback?: { blockReason?: string };
  usageMetadata?: Record<string, unknown>;
  responseId?: string;
  error?: { code?: number; message?: string; status?: string };
}

const FILTERED = new Set(["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE"]);

export function finishReasonOf(reason: string | undefined, calledFunction: boolean): ChatFinishReason {
  if (reason === "MAX_TOKENS") return "length";
  if (reason && FILTERED.has(reason)) return "content_filter";
  return calledFunction ? "tool_calls" : "stop";
}

const num = (v: unknown) => (typeof v === "number" ? v : undefined);

/** Gemini's usageMetadata in OpenAI's shape; undefined when it sent none (reelay then counts). */
export function usageOf(u: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!u || typeof u !== "object") return undefined;
  const prompt = (num(u.promptTokenCount) ?? 0) + (num(u.toolUsePromptTokenCount) ?? 0);
  const thoughts = num(u.thoughtsTokenCount) ?? 0;
  const completion = (num(u.candidatesTokenCount) ?? 0) + thoughts;
  const cached = num(u.cachedContentTokenCount);
  return {
    prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion,
    ...(cached !== undefined ? { prompt_tokens_details: { cached_tokens: cached } } : {}),
    ...(thoughts ? { completion_tokens_details: { reasoning_tokens: thoughts } } : {}),
  };
}

let callCounter = 0;
const callId = (given?: string) => given ?? `call_${Date.now().toString(36)}${(callCounter++).toString(36)}${Math.random().toString(36).slice(2, 8)}`;

function toolCall(p: Part, index?: number) {
  const c = p.functionCall!;
  return {
    ...(index !== undefined ? { index } : {}),
    id: callId(c.id), type: "function" as const, function: { name: c.name, arguments: JSON.stringify(c.args ?? {}) },
    ...(p.thoughtSignature ? { extra_content: { google: { thought_signature: p.thoughtSignature } } } : {}),
  };
}

/** An error object sent instead of an answer (in a stream, as an event). */
export function errorOfAnswer(e: NonNullable<GenerateResponse["error"]>, started: boolean): PluginError {
  const message = `${e.status ?? "error"}: ${e.message ?? "Gemini's stream failed"}`;
  if (started) return new PluginError("stream_interrupted", `upstream error event after the answer began (${message})`);
  return new PluginError("upstream_http", message, { status: typeof e.code === "number" && e.code >= 400 ? e.code : 500, code: e.status });
}

export function toChatCompletion(r: GenerateResponse, model: string): ChatCompletion {
  if (typeof r !== "object" || r === null) throw new PluginError("malformed", "upstream answer is not a GenerateContentResponse");
  if (r.error) throw errorOfAnswer(r.error, false);
  const out = chatChunks({ model, id: r.responseId ? `chatcmpl-${r.responseId}` : undefined });
  const usage = usageOf(r.usageMetadata);
  const candidate = r.candidates?.[0];
  if (!candidate) {
    if (!r.promptFeedback?.blockReason) throw new PluginError("malformed", "upstream answer has neither a candidate nor a promptFeedback.blockReason");
    const completion = out.completion({ content: null }, "content_filter");
    (completion.choices[0]!.message as { refusal?: string }).refusal = `The prompt was blocked by Gemini (${r.promptFeedback.blockReason}).`;
    return { ...completion, ...(usage ? { usage: usage as unknown as ChatCompletion["usage"] } : {}) };
  }
  let text = "";
  let reasoning: string | null = null;
  const calls = [];
  for (const p of candidate.content?.parts ?? []) {
    if (p.functionCall) calls.push(toolCall(p));
    else if (typeof p.text === "string") {
      if (p.thought) reasoning = (reasoning ?? "") + p.text;
      else text += p.text;
    }
  }
  const completion = out.completion({ content: calls.length && !text ? null : text, ...(calls.length ? { tool_calls: calls } : {}) }, finishReasonOf(candidate.finishReason, calls.length > 0));
  if (reasoning !== null) completion.choices[0]!.message.reasoning_content = reasoning;
  return { ...completion, ...(usage ? { usage: usage as unknown as ChatCompletion["usage"] } : {}) };
}

/** Gemini stream chunks → chat stream events (the role chunk comes with the first part). */
export async function* toChatStream(events: AsyncIterable<{ json: Record<string, unknown> }>, model: string): AsyncGenerator<ChatStreamEvent> {
  const out = chatChunks({ model });
  const head = { id: out.id, object: "chat.completion.chunk" as const, created: out.created, model };
  const chunk = (delta: ChatCompletionChunk["choices"][number]["delta"]) => chunkEvent({ ...head, choices: [{ index: 0, delta, finish_reason: null }] });
  let started = false;
  let usage: Record<string, unknown> | undefined;
  let finish: string | undefined;
  let blocked: string | undefined;
  let calls = 0;
  for await (const { json } of events) {
    const r = json as GenerateResponse;
    if (r.error) throw errorOfAnswer(r.error, started);
    if (r.usageMetadata) usage = r.usageMetadata;
    if (r.promptFeedback?.blockReason) blocked = r.promptFeedback.blockReason;
    const candidate = r.candidates?.[0];
    for (const p of candidate?.content?.parts ?? []) {
      let delta: ChatCompletionChunk["choices"][number]["delta"] | null = null;
      if (p.functionCall) delta = { tool_calls: [toolCall(p, calls++) as ChatChunkToolCall] };
      else if (typeof p.text === "string" && p.text) delta = p.thought ? { reasoning_content: p.text } : { content: p.text };
      if (!delta) continue;
      if (!started) {
        started = true;
        yield out.role();
      }
      yield chunk(delta);
    }
    if (candidate?.finishReason) finish = candidate.finishReason;
  }
  if (finish === undefined && blocked === undefined) throw new PluginError(started ? "stream_interrupted" : "malformed", "upstream stream ended before a finishReason");
  if (!started) yield out.role();
  if (blocked !== undefined) yield chunkEvent({ ...head, choices: [{ index: 0, delta: { refusal: `The prompt was blocked by Gemini (${blocked}).` }, finish_reason: null }] });
  yield out.finish(blocked !== undefined ? "content_filter" : finishReasonOf(finish, calls > 0));
  const u = usageOf(usage);
  if (u) yield chunkEvent({ ...head, choices: [], usage: u as unknown as ChatCompletionChunk["usage"] });
  yield out.done();
}
