/**
 * Other wire formats over the chat pipeline, streamed: the chat module's own stream
 * (relay-stream.ts: hold, upstream call, delivery count, disconnect → upstream aborted and prompt +
 * delivered tokens charged) is read event by event and each event is rewritten into the client's
 * format before it is sent. Both streams are pull-based with highWaterMark 0, so an upstream chunk
 * is read only when the client side asks for more: what the chat relay counts as delivered is what
 * was handed to this client's socket, exactly as for /v1/chat/completions. A client that goes away
 * cancels this stream, which cancels the chat stream, which aborts the upstream request.
 *
 * The chat stream reports what it billed (`call.billed`) before it sends its last event (`[DONE]`,
 * or the error event of a stream that broke), so the closing events carry the counts the account
 * was actually charged, cache reads and writes included.
 */
import { createParser, type EventSourceMessage } from "eventsource-parser";
import type { AppDeps } from "../../deps.ts";
import { streamChat } from "../chat/relay-stream.ts";
import type { ChatCall, PipelineCall } from "../chat/service.ts";
import { billedChat, type BilledChat } from "./complete.ts";

/** The OpenAI error envelope's inner object, as the chat stream sends it mid-stream. */
export interface StreamError {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

export interface ChatStreamRewriter {
  /** the SSE text to send for one chat.completion.chunk (may be "" when it carries nothing to show) */
  chunk(json: any): string;
  /** the chat stream ended normally: closing events, with what was billed */
  done(billed: BilledChat): Promise<string> | string;
  /** the chat stream broke after it started: the client's error events */
  failed(error: StreamError, billed: BilledChat): Promise<string> | string;
  /** sent when nothing went out for `everyMs` while the upstream is quiet (Anthropic's `ping`), so idle-timeouts between here and the client keep the stream */
  keepAlive?: { everyMs: number; event: string };
}

const encoder = new TextEncoder();

export async function streamViaChat(deps: AppDeps, call: ChatCall, rewriter: ChatStreamRewriter): Promise<Response> {
  const billed = billedChat();
  const chat = await streamChat(deps, billingInto(call, billed));
  return rewriteChatStream(deps, call.requestId, chat, rewriter, billed);
}

/** The call, with what it is billed copied into `billed` as the chat stream closes (before its last event). */
export function billingInto<C extends PipelineCall>(call: C, billed: BilledChat): C {
  return {
    ...call,
    billed(closed) {
      call.billed?.(closed);
      Object.assign(billed, billedChat(closed));
    },
  };
}

/** A chat stream's response (relay-stream.ts) rewritten event by event into the client's format; `billed` is filled in by billingInto before the last event. */
export function rewriteChatStream(deps: AppDeps, requestId: string, chat: Response, rewriter: ChatStreamRewriter, billed: BilledChat): Response {
  const reader = chat.body!.getReader();
  const decoder = new TextDecoder();
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => events.push(e) });

  // keep-alive: one timer per stream, sending only while a pull waits on a quiet upstream (the
  // client is then waiting for data, so the event goes straight to it), never after the last event
  let waiting = false;
  let lastSent = performance.now();
  let keepAlive: ReturnType<typeof setInterval> | undefined;
  let quiet = false;
  const stop = () => {
    quiet = true;
    clearInterval(keepAlive);
  };

  // An error event is held until the chat stream ends: an upstream's own error event is relayed as
  // a chunk and followed by the relay's error event, sent after the request was billed.
  let pendingError: StreamError | null = null;
  const rewrite = async (e: EventSourceMessage): Promise<string> => {
    if (e.data === "[DONE]") {
      stop();
      const error = pendingError;
      pendingError = null;
      return error ? rewriter.failed(error, billed) : rewriter.done(billed);
    }
    const json = JSON.parse(e.data); // the chat relay sends only JSON it parsed itself
    if (json?.error && !Array.isArray(json.choices)) {
      pendingError = json.error as StreamError;
      return "";
    }
    return rewriter.chunk(json);
  };

  let cancelled = false;
  const send = (controller: ReadableStreamDefaultController<Uint8Array>, text: string) => {
    controller.enqueue(encoder.encode(text));
    if (keepAlive) lastSent = performance.now();
  };
  const body = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const k = rewriter.keepAlive;
        if (!k) return;
        keepAlive = setInterval(() => {
          if (waiting && !quiet && !cancelled && performance.now() - lastSent >= k.everyMs) send(controller, k.event);
        }, k.everyMs / 2);
      },
      async pull(controller) {
        try {
          for (;;) {
            waiting = true;
            const r = await reader.read();
            waiting = false;
            if (cancelled) return; // the client went away while the chat stream was read: nothing more to send
            if (r.done) {
              // the chat stream ended: after [DONE], after its error event, or because the client left (cancelled above)
              const error = pendingError;
              pendingError = null;
              const tail = error ? await rewriter.failed(error, billed) : "";
              if (tail) send(controller, tail);
              stop();
              return controller.close();
            }
            parser.feed(decoder.decode(r.value, { stream: true }));
            let out = "";
            for (const e of events.splice(0)) out += await rewrite(e);
            if (out) return send(controller, out);
          }
        } catch (err) {
          waiting = false;
          stop();
          if (cancelled) return;
          // a bug in a rewriter: stop the chat stream too (its upstream is aborted, delivered tokens billed)
          deps.logger.error({ err, requestId }, "stream rewrite failed");
          await reader.cancel(err).catch(() => {});
          controller.error(err);
        }
      },
      cancel: (reason) => {
        cancelled = true;
        stop();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { headers: chat.headers });
}
