/**
 * Streamed chat: upstream events are written to the client one by one as they arrive
 * (`data: <raw>\n\n`, no re-chunking), and the bill follows what was actually delivered.
 *
 * The first event is awaited before the response starts, so a failure before any output (refused,
 * 5xx, first-byte timeout) still gets a real status code (502 / 504) and costs nothing. After that
 * the status is 200 and a failure becomes an SSE error event followed by the end of the stream.
 * The stream is pull-based with highWaterMark 0: an event is read from the upstream only when the
 * client side asks for one, so "enqueued" means "handed to the socket", and a disconnect (cancel)
 * aborts the upstream request at once.
 */
import type { AppDeps } from "../../deps.ts";
import type { ChatStreamEvent } from "../../plugin-sdk/index.ts";
import { DeliveryCount } from "./delivery-count.ts";
import { failChat, finishChat, prepareChat, withFallbacks, type ChatCall, type PreparedChat } from "./service.ts";
import { clientErrorFrom, pluginErrorKind } from "../../http/plugin-errors.ts";

const encoder = new TextEncoder();
const DONE = encoder.encode("data: [DONE]\n\n");
/** The first `"model": "…"` of a chunk is its top-level model (id, object, created, model, choices …). */
const MODEL_FIELD = /"model"\s*:\s*"(?:[^"\\]|\\.)*"/;

export async function streamChat(deps: AppDeps, call: ChatCall): Promise<Response> {
  const p = await prepareChat(deps, call);
  const upstream = new AbortController();
  let relay: Relay | undefined;
  const onClientGone = () => (relay ? relay.clientGone() : upstream.abort(new DOMException("client disconnected", "AbortError")));
  call.signal.addEventListener("abort", onClientGone, { once: true });
  // the server's drain timeout (src/lifecycle.ts): the stream ends with an error event, billed on what was delivered
  const cutSignal = deps.lifecycle?.cutSignal;
  const onCut = () => (relay ? relay.cut(cutSignal!.reason) : upstream.abort(cutSignal!.reason));
  cutSignal?.addEventListener("abort", onCut, { once: true });
  let events: AsyncIterator<ChatStreamEvent>;
  let first: IteratorResult<ChatStreamEvent>;
  try {
    if (call.signal.aborted) onClientGone();
    // the first event before the answer: a failure up to here reached the client as nothing, so a fallback model may serve
    [events, first] = await withFallbacks(deps, call, p, async (p) => {
      const it = (await p.chat.stream(p.forwarded, { signal: upstream.signal, requestId: call.requestId, routed: p.routed }))[Symbol.asyncIterator]();
      return [it, await it.next()] as const;
    });
  } catch (err) {
    call.signal.removeEventListener("abort", onClientGone);
    cutSignal?.removeEventListener("abort", onCut);
    throw failChat(deps, call, p, err, call.signal.aborted);
  }
  relay = new Relay(deps, call, p, events, first, upstream, () => {
    call.signal.removeEventListener("abort", onClientGone);
    cutSignal?.removeEventListener("abort", onCut);
  });
  if (cutSignal?.aborted) relay.cut(cutSignal.reason);
  return new Response(relay.body, {
    headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-accel-buffering": "no", ...p.headers },
  });
}

type End = { kind: "done" } | { kind: "disconnected" } | { kind: "failed"; err: unknown };

class Relay {
  readonly body: ReadableStream<Uint8Array>;
  private readonly count = new DeliveryCount();
  private readonly wantsUsage: boolean;
  private readonly wantsRunningUsage: boolean;
  private readonly modelField: string;
  private pending: IteratorResult<ChatStreamEvent> | null;
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  private gone = false;
  private pulling = false;
  private ended = false;
  /** the server's drain timeout ended the stream (the error it ends with) */
  private cutBy: unknown = null;

  constructor(
    private readonly deps: AppDeps,
    private readonly call: ChatCall,
    private readonly p: PreparedChat,
    private readonly events: AsyncIterator<ChatStreamEvent>,
    first: IteratorResult<ChatStreamEvent>,
    private readonly upstream: AbortController,
    private readonly cleanup: () => void,
  ) {
    const so = call.body.stream_options as Record<string, unknown> | null | undefined;
    this.wantsUsage = so?.include_usage === true;
    this.wantsRunningUsage = so?.continuous_usage_stats === true;
    this.modelField = `"model":${JSON.stringify(p.model.id)}`;
    this.pending = first;
    this.body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.controller = controller;
        },
        pull: async () => {
          this.pulling = true;
          try {
            await this.pull(this.controller);
          } finally {
            this.pulling = false;
          }
        },
        cancel: () => this.clientGone(),
      },
      { highWaterMark: 0 },
    );
  }

  /** The client went away (stream cancelled or request aborted, whichever Bun reports first). */
  clientGone(): void {
    if (this.gone) return;
    this.gone = true;
    this.upstream.abort(new DOMException("client disconnected", "AbortError"));
    // a pull in progress sees the abort and ends the request; between pulls nobody else would
    if (!this.pulling) void this.end(this.controller, { kind: "disconnected" });
  }

  /** The server is shutting down and its drain timeout passed: end with `reason` as an error event. */
  cut(reason: unknown): void {
    if (this.ended || this.gone || this.cutBy) return;
    this.cutBy = reason;
    this.upstream.abort(reason);
    if (!this.pulling) void this.end(this.controller, { kind: "failed", err: reason });
  }

  /** Write the next relayed event (skipping events the client did not ask for), or end the stream. */
  private async pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    while (!this.ended) {
      let next: IteratorResult<ChatStreamEvent>;
      try {
        next = this.pending ?? (await this.events.next());
        this.pending = null;
      } catch (err) {
        return this.end(controller, this.gone || this.call.signal.aborted ? { kind: "disconnected" } : { kind: "failed", err: this.cutBy ?? err });
      }
      if (this.gone) return this.end(controller, { kind: "disconnected" });
      if (this.cutBy) return this.end(controller, { kind: "failed", err: this.cutBy });
      if (next.done || next.value.data === "[DONE]") return this.end(controller, { kind: "done" });
      const out = this.relayable(next.value);
      if (out === null) continue;
      controller.enqueue(encoder.encode(`data: ${out}\n\n`));
      this.count.delivered(next.value.json);
      return;
    }
  }

  /** The payload to send for an upstream event, or null to drop it. */
  private relayable(e: ChatStreamEvent): string | null {
    const json = e.json;
    this.count.observe(json);
    const usage = json?.usage;
    let data = e.data;
    if (usage && Array.isArray(json.choices)) {
      // usage is always requested upstream (billing needs it): hide what the client did not ask for
      if (json.choices.length === 0 && !this.wantsUsage) return null;
      if (json.choices.length > 0 && !this.wantsRunningUsage) {
        const { usage: _, ...rest } = json;
        data = JSON.stringify(this.wantsUsage ? { ...rest, usage: null } : rest);
      }
    }
    return data.includes(this.modelField) ? data : data.replace(MODEL_FIELD, this.modelField);
  }

  private async end(controller: ReadableStreamDefaultController<Uint8Array>, end: End): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.cleanup();
    this.upstream.abort(); // no-op after a normal end; stops the upstream request otherwise
    this.events.return?.().catch(() => {});
    const apiError = end.kind === "failed" ? clientErrorFrom(end.err) : null;
    if (apiError?.status === 500) this.deps.logger.error({ err: (end as { err: unknown }).err, requestId: this.call.requestId, plugin: this.p.model.plugin, model: this.p.model.id }, "chat stream: unexpected error");
    this.deps.telemetry.upstream({
      plugin: this.p.model.plugin, model: this.p.model.id, ms: performance.now() - this.call.startedAt,
      outcome: end.kind === "failed" ? "error" : "ok", errorKind: end.kind === "failed" ? pluginErrorKind(end.err) : undefined,
    });
    const delivered = this.count.localTokens();
    const reported = this.count.reported;
    // the upstream's final count when the stream ended normally; else what was delivered, by the
    // upstream's running count when it sends one (vLLM continuous_usage_stats), else reelay's own
    const completion = end.kind === "done" && reported ? reported.completion : this.count.running;
    try {
      finishChat(this.call, this.p, {
        status: 200,
        // a stream that broke (or was abandoned) before any token costs nothing
        charge: end.kind === "done" || delivered > 0,
        reported: { ...reported, prompt: reported?.prompt, completion },
        local: { prompt: this.p.promptEstimate, completion: delivered },
        deliveredTokens: delivered,
        disconnected: end.kind === "disconnected",
        errorCode: end.kind === "disconnected" ? "client_disconnected" : apiError?.code ?? null,
      });
    } catch (err) {
      this.deps.logger.error({ err, requestId: this.call.requestId }, "chat stream: settling failed");
    }
    if (end.kind === "disconnected") return;
    try {
      controller.enqueue(apiError ? encoder.encode(`data: ${JSON.stringify(apiError.toJSON())}\n\n`) : DONE);
      controller.close();
    } catch {
      // the client went away while we were settling
    }
  }
}
