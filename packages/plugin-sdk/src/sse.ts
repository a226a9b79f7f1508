/**
 * Server-sent events of an OpenAI-style chat stream → ChatStreamEvents, one at a time as the bytes
 * arrive (eventsource-parser does the SSE framing). Every `data:` payload but `[DONE]` must be a
 * JSON object; it is yielded with its text (relayed to the client as is) and its parsed value.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
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
