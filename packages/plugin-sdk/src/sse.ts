/**
 * Server-sent events → parsed events, one at a time as the bytes arrive (eventsource-parser does
 * the SSE framing). `readSse`: an OpenAI-style chat stream (unnamed events, `[DONE]` last) as
 * ChatStreamEvents. `readMessagesSse`: an Anthropic Messages stream (named events, `message_stop`
 * last) as MessagesStreamEvents. Every payload must be a JSON object; it is yielded with its text
 * (relayed to the client as is) and its parsed value.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import type { MessagesStreamEvent } from "./anthropic-messages.ts";
import type { ChatStreamEvent } from "./capabilities.ts";
import { PluginError } from "./errors.ts";
import type { ChatCompletionChunk } from "./openai-chat.ts";

export interface SseOptions {
  /** the largest single event, bytes (default 1 MiB; a chat chunk is well under 10 KB) */
  maxEventBytes?: number;
  /** applied to each payload before anything reads it (hide credentials an upstream echoes) */
  redact?: (text: string) => string;
}

/**
 * Ends after `[DONE]`. Throws `malformed` for a payload that is not a JSON object or an event over
 * maxEventBytes, and when the bytes end before `[DONE]`: `stream_interrupted` if events had been
 * yielded (the client has part of the answer), `malformed` if none had.
 */
export async function* readSse(chunks: AsyncIterable<Uint8Array>, opts: SseOptions = {}): AsyncGenerator<ChatStreamEvent> {
  const redact = opts.redact ?? ((t: string) => t);
  const pending: EventSourceMessage[] = [];
  let overflow: Error | undefined;
  const parser = createParser({
    maxBufferSize: opts.maxEventBytes ?? 1024 * 1024,
    onEvent: (e) => pending.push(e),
    onError: (e) => {
      // unknown fields and bad `retry:` values are ignorable per the SSE spec; an overflow is not
      if (e.type === "max-buffer-size-exceeded") overflow = e;
    },
  });
  const decoder = new TextDecoder();
  let yielded = 0;
  for await (const chunk of chunks) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    if (overflow) throw new PluginError("malformed", `upstream stream: ${overflow.message}`, { cause: overflow });
    while (pending.length > 0) {
      const data = redact(pending.shift()!.data);
      if (data === "[DONE]") {
        yield { data: "[DONE]" };
        return;
      }
      yield { data, json: parseChunk(data) };
      yielded++;
    }
  }
  if (yielded > 0) throw new PluginError("stream_interrupted", `upstream stream ended after ${yielded} events without [DONE]`);
  throw new PluginError("malformed", "upstream stream ended before any event");
}

/**
 * An Anthropic Messages stream: every event with its name (`event:`; an unnamed one takes its
 * payload's `type`), ending after `message_stop` or an `error` event (the caller decides what an
 * error means). `ping`s are yielded too. Throws like readSse: `malformed` for a payload that is not
 * a JSON object or an oversized event, and when the bytes end early: `stream_interrupted` after
 * events were yielded, `malformed` before any.
 */
export async function* readMessagesSse(chunks: AsyncIterable<Uint8Array>, opts: SseOptions = {}): AsyncGenerator<MessagesStreamEvent> {
  const redact = opts.redact ?? ((t: string) => t);
  const pending: EventSourceMessage[] = [];
  let overflow: Error | undefined;
  const parser = createParser({
    maxBufferSize: opts.maxEventBytes ?? 1024 * 1024,
    onEvent: (e) => pending.push(e),
    onError: (e) => {
      if (e.type === "max-buffer-size-exceeded") overflow = e;
    },
  });
  const decoder = new TextDecoder();
  let yielded = 0;
  for await (const chunk of chunks) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    if (overflow) throw new PluginError("malformed", `upstream stream: ${overflow.message}`, { cause: overflow });
    while (pending.length > 0) {
      const e = pending.shift()!;
      const data = redact(e.data);
      const json = parseChunk(data) as unknown as MessagesStreamEvent["json"];
      const event = e.event ?? (typeof json.type === "string" ? json.type : "message");
      yield { event, data, json };
      yielded++;
      if (event === "message_stop" || event === "error") return;
    }
  }
  if (yielded > 0) throw new PluginError("stream_interrupted", `upstream stream ended after ${yielded} events without message_stop`);
  throw new PluginError("malformed", "upstream stream ended before any event");
}

/**
 * Server-sent events whose `data:` payloads are JSON objects, with no end marker: the stream ends
 * when the bytes end (Google's `streamGenerateContent?alt=sse`). Yields every event, its name when
 * it has one; whether the end came too early is the caller's to judge (its last event says). Throws
 * `malformed` for a payload that is not a JSON object or an event over maxEventBytes.
 */
export async function* readJsonSse(chunks: AsyncIterable<Uint8Array>, opts: SseOptions = {}): AsyncGenerator<{ event?: string; data: string; json: Record<string, unknown> }> {
  const redact = opts.redact ?? ((t: string) => t);
  const pending: EventSourceMessage[] = [];
  let overflow: Error | undefined;
  const parser = createParser({
    maxBufferSize: opts.maxEventBytes ?? 1024 * 1024,
    onEvent: (e) => pending.push(e),
    onError: (e) => {
      if (e.type === "max-buffer-size-exceeded") overflow = e;
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of chunks) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    if (overflow) throw new PluginError("malformed", `upstream stream: ${overflow.message}`, { cause: overflow });
    while (pending.length > 0) {
      const e = pending.shift()!;
      const data = redact(e.data);
      yield { ...(e.event ? { event: e.event } : {}), data, json: parseChunk(data) as unknown as Record<string, unknown> };
    }
  }
}

function parseChunk(data: string): ChatCompletionChunk {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch (err) {
    throw new PluginError("malformed", `upstream sent a non-JSON event: ${JSON.stringify(data.slice(0, 80))}`, { cause: err });
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw new PluginError("malformed", `upstream sent an event that is not a JSON object: ${JSON.stringify(data.slice(0, 80))}`);
  return json as ChatCompletionChunk;
}
