/** Server-sent events of an OpenAI-style stream → ChatStreamEvent, one at a time as they arrive. */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { PluginError, type ChatStreamEvent } from "../../src/plugin-sdk/index.ts";
import type { Redact } from "./redact.ts";

/**
 * Yields each `data:` payload with its parsed JSON, ending after `[DONE]`. Throws
 * PluginError('malformed') for a non-JSON payload, an event over `maxEventChars` (it is not a chat
 * chunk; stop before it eats memory) or when the bytes end before `[DONE]`. Payloads go through
 * `redact` before anything reads them.
 */
export async function* sseEvents(chunks: AsyncIterable<Uint8Array>, opts: { maxEventChars: number; redact: Redact }): AsyncGenerator<ChatStreamEvent> {
  const pending: EventSourceMessage[] = [];
  let parseError: Error | undefined;
  const parser = createParser({
    maxBufferSize: opts.maxEventChars,
    onEvent: (e) => pending.push(e),
    onError: (e) => {
      // unknown fields and bad `retry:` values are ignorable per the SSE spec; an overflow is not
      if (e.type === "max-buffer-size-exceeded") parseError = e;
    },
  });
  const decoder = new TextDecoder();

  for await (const chunk of chunks) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    if (parseError) throw new PluginError("malformed", `upstream stream: ${parseError.message}`, { cause: parseError });
    while (pending.length > 0) {
      const data = opts.redact(pending.shift()!.data);
      if (data === "[DONE]") {
        yield { data };
        return;
      }
      yield { data, json: parseJson(data) };
    }
  }
  throw new PluginError("malformed", "upstream stream ended without [DONE]");
}

function parseJson(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch (err) {
    throw new PluginError("malformed", `upstream sent a non-JSON event: ${JSON.stringify(data.slice(0, 80))}`, { cause: err });
  }
}
