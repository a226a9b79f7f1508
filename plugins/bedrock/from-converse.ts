/**
 * Bedrock Converse answers → OpenAI chat answers, and what the AWS SDK throws → the SDK's error kinds.
 *
 * - text blocks → `content`; reasoningContent → `reasoning_content` (and `thinking_blocks` with
 *   the signature, as the anthropic plugin gives them); toolUse → `tool_calls`
 * - stopReason: end_turn / stop_sequence → stop, max_tokens → length, tool_use → tool_calls,
 *   guardrail_intervened / content_filtered → content_filter
 * - usage: prompt_tokens = inputTokens + cacheReadInputTokens + cacheWriteInputTokens (Bedrock's
 *   inputTokens leaves the cache out), the cache in prompt_tokens_details (cached_tokens,
 *   cache_write_tokens: billed at the model's cachedInputPerMillion / cacheWritePerMillion)
 * Streams: one chat chunk per delta; the finish chunk after messageStop, the usage chunk after
 * the metadata event, then [DONE].
 */
import { chatChunks, chunkEvent, isPluginError, PluginError, type ChatChunkToolCall, type ChatCompletion, type ChatCompletionChunk, type ChatFinishReason, type ChatStreamEvent } from "@reelay/plugin-sdk";

export function finishReasonOf(stop: unknown): ChatFinishReason {
  switch (stop) {
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "tool_use":
      return "tool_calls";
    case "guardrail_intervened":
    case "content_filtered":
      return "content_filter";
    default:
      return "stop";
  }
}

const num = (v: unknown) => (typeof v === "number" ? v : 0);

/** Converse's usage in OpenAI's shape; undefined when it sent none. */
export function usageOf(u: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!u || typeof u !== "object") return undefined;
  const read = num(u.cacheReadInputTokens);
  const written = num(u.cacheWriteInputTokens);
  const prompt = num(u.inputTokens) + read + written;
  const completion = num(u.outputTokens);
  return {
    prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion,
    ...(u.cacheReadInputTokens !== undefined || u.cacheWriteInputTokens !== undefined ? { prompt_tokens_details: { cached_tokens: read, cache_write_tokens: written } } : {}),
  };
}

type Thinking = { type: "thinking"; thinking: string; signature: string };

export function toChatCompletion(r: any, model: string): ChatCompletion {
  const content = r?.output?.message?.content;
  if (!Array.isArray(content)) throw new PluginError("malformed", "upstream Converse answer has no output.message.content");
  let text = "";
  let reasoning: string | null = null;
  const thinking: Thinking[] = [];
  const calls = [];
  for (const b of content) {
    if (typeof b.text === "string") text += b.text;
    else if (b.reasoningContent?.reasoningText) {
      const t = b.reasoningContent.reasoningText;
      reasoning = (reasoning ?? "") + String(t.text ?? "");
      thinking.push({ type: "thinking", thinking: String(t.text ?? ""), signature: String(t.signature ?? "") });
    } else if (b.toolUse) calls.push({ id: String(b.toolUse.toolUseId), type: "function" as const, function: { name: String(b.toolUse.name), arguments: JSON.stringify(b.toolUse.input ?? {}) } });
  }
  const out = chatChunks({ model });
  const completion = out.completion({ content: calls.length && !text ? null : text, ...(calls.length ? { tool_calls: calls } : {}) }, finishReasonOf(r.stopReason));
  const message = completion.choices[0]!.message as ChatCompletion["choices"][number]["message"] & { thinking_blocks?: Thinking[] };
  if (reasoning !== null) message.reasoning_content = reasoning;
  if (thinking.length) message.thinking_blocks = thinking;
  const usage = usageOf(r.usage);
  return { ...completion, ...(usage ? { usage: usage as unknown as ChatCompletion["usage"] } : {}) };
}

/** ConverseStream events (as the AWS SDK decodes them) → chat stream events. */
export async function* toChatStream(events: AsyncIterable<Record<string, any>>, model: string): AsyncGenerator<ChatStreamEvent> {
  const out = chatChunks({ model });
  const head = { id: out.id, object: "chat.completion.chunk" as const, created: out.created, model };
  const chunk = (delta: ChatCompletionChunk["choices"][number]["delta"] & { thinking_blocks?: Thinking[] }) => chunkEvent({ ...head, choices: [{ index: 0, delta, finish_reason: null }] });
  let started = false;
  const first = function* (): Generator<ChatStreamEvent> {
    if (started) return;
    started = true;
    yield out.role();
  };
  /** content block index → its tool call's index, and the thinking text so far */
  const tools = new Map<number, number>();
  const reasoning = new Map<number, string>();
  let stop: unknown = null;
  let stopped = false;
  for await (const e of events) {
    if (e.contentBlockStart?.start?.toolUse) {
      const t = e.contentBlockStart.start.toolUse;
      const index = tools.size;
      tools.set(Number(e.contentBlockStart.contentBlockIndex), index);
      yield* first();
      yield chunk({ tool_calls: [{ index, id: String(t.toolUseId), type: "function", function: { name: String(t.name), arguments: "" } } as ChatChunkToolCall] });
    } else if (e.contentBlockDelta) {
      const d = e.contentBlockDelta.delta ?? {};
      const block = Number(e.contentBlockDelta.contentBlockIndex);
      if (typeof d.text === "string" && d.text) {
        yield* first();
        yield chunk({ content: d.text });
      } else if (typeof d.toolUse?.input === "string" && d.toolUse.input && tools.has(block)) {
        yield* first();
        yield chunk({ tool_calls: [{ index: tools.get(block)!, function: { arguments: d.toolUse.input } }] });
      } else if (typeof d.reasoningContent?.text === "string" && d.reasoningContent.text) {
        reasoning.set(block, (reasoning.get(block) ?? "") + d.reasoningContent.text);
        yield* first();
        yield chunk({ reasoning_content: d.reasoningContent.text });
      } else if (typeof d.reasoningContent?.signature === "string") {
        yield* first();
        yield chunk({ thinking_blocks: [{ type: "thinking", thinking: reasoning.get(block) ?? "", signature: d.reasoningContent.signature }] });
      }
    } else if (e.messageStop) {
      stop = e.messageStop.stopReason;
      stopped = true;
    } else if (e.metadata) {
      if (!stopped) continue;
      yield* first();
      yield out.finish(finishReasonOf(stop));
      const usage = usageOf(e.metadata.usage);
      if (usage) yield chunkEvent({ ...head, choices: [], usage: usage as unknown as ChatCompletionChunk["usage"] });
      yield out.done();
      return;
    }
  }
  if (stopped) {
    // no metadata event: the answer is whole, reelay counts its tokens
    yield* first();
    yield out.finish(finishReasonOf(stop));
    yield out.done();
    return;
  }
  throw new PluginError(started ? "stream_interrupted" : "malformed", "upstream stream ended before messageStop");
}

/** What a Bedrock exception means for the client, the retry and the breaker (https://docs.aws.amazon.com/bedrock/latest/APIReference/CommonErrors.html). */
const EXCEPTIONS: Record<string, { status: number; kind?: "overloaded" | "timeout" }> = {
  ThrottlingException: { status: 429 },
  ServiceQuotaExceededException: { status: 429 },
  ValidationException: { status: 400 },
  AccessDeniedException: { status: 403 },
  UnrecognizedClientException: { status: 403 },
  InvalidSignatureException: { status: 403 },
  ExpiredTokenException: { status: 403 },
  ResourceNotFoundException: { status: 404 },
  ModelNotReadyException: { status: 503, kind: "overloaded" },
  ServiceUnavailableException: { status: 503 },
  InternalServerException: { status: 500 },
  ModelStreamErrorException: { status: 502 },
  ModelErrorException: { status: 502 },
  ModelTimeoutException: { status: 504, kind: "timeout" },
};

/**
 * What to throw for an error of the AWS SDK (or of the transport under it). `started`: part of
 * the answer went out (a stream), so any failure is `stream_interrupted`.
 */
export function failureOf(err: unknown, started: boolean, signal: AbortSignal, throttleRetryAfter: number): unknown {
  if (signal.aborted) return signal.reason ?? err;
  const e = err as { name?: string; message?: string; code?: string; $metadata?: { httpStatusCode?: number }; $response?: { headers?: Record<string, string> } } | null;
  if (started) {
    const what = isPluginError(err) ? err.message : `${e?.name ?? "Error"}: ${e?.message ?? "the upstream stream failed"}`;
    return new PluginError("stream_interrupted", `upstream stream broke after the answer began (${what})`, { cause: err });
  }
  if (isPluginError(err)) return err; // a deadline of the transport
  const message = `${e?.name ?? "Error"}: ${e?.message ?? "Bedrock failed"}`;
  const known = e?.name ? EXCEPTIONS[e.name] : undefined;
  if (known) {
    const header = e?.$response?.headers?.["retry-after"];
    const retryAfterSeconds = known.status === 429 || known.kind === "overloaded" ? (header && /^\d+$/.test(header) ? Math.min(3600, Number(header)) : throttleRetryAfter) : undefined;
    if (known.kind === "overloaded") return new PluginError("overloaded", `Bedrock model not ready (${message})`, { retryAfterSeconds, cause: err });
    if (known.kind === "timeout") return new PluginError("timeout", message, { cause: err });
    return new PluginError("upstream_http", message, { status: known.status, code: e!.name, retryAfterSeconds, cause: err });
  }
  const status = e?.$metadata?.httpStatusCode;
  if (status !== undefined && status >= 400) return new PluginError("upstream_http", message, { status, code: e?.name, cause: err });
  const code = e?.code ?? "";
  if (/ECONNREFUSED|ConnectionRefused|ECONNRESET|ConnectionClosed|ENOTFOUND|EAI_AGAIN|socket/i.test(`${code} ${e?.message ?? ""}`)) return new PluginError("connect", `upstream connection failed (${code || e?.message})`, { cause: err });
  // a 200 whose body is not Bedrock's (a proxy's page): the SDK could not read it
  return new PluginError("malformed", `upstream answer could not be read (${message.slice(0, 200)})`, { cause: err });
}
