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
 *
 * The relay itself (relayStream) knows no wire format: what an event delivers, what usage it
 * reports and how a stream is closed come from a RelayFormat — chat's here (ChatFormat), the
 * Anthropic Messages events of a plugin that speaks them natively in modules/messages/.
 */
import type { AppDeps } from "../../deps.ts";
import type { ApiError } from "../../errors.ts";
import type { ChatStreamEvent } from "../../plugin-sdk/index.ts";
import type { ClosedRequest, ReportedUsage } from "./close-request.ts";
import { DeliveryCount } from "./delivery-count.ts";
import type { ChatCompletionRequest } from "./model.ts";
import { failChat, finishChat, prepareChat, withFallbacks, type ChatCall, type PipelineCall, type PreparedChat } from "./service.ts";
import { clientErrorFrom, pluginErrorKind } from "../../http/plugin-errors.ts";
import type { RequestTrace } from "../../ops/hooks.ts";
import { GEN_AI } from "../../ops/tracing/attributes.ts";

const encoder = new TextEncoder();
/** The first `"model": "…"` of a chunk is its top-level model (id, object, created, model, choices …). */
const MODEL_FIELD = /"model"\s*:\s*"(?:[^"\\]|\\.)*"/;

/** How the relay reads and writes one wire format's events. */
export interface RelayFormat<E> {
  /** the upstream's end marker: not sent itself (`done` closes the stream, once it is billed) */
  isEnd(e: E): boolean;
  /** note the event's usage and return the text to send for it, or null to send nothing for it now */
  relay(e: E): string | null;
  /** the event's text was handed to the client */
  delivered(e: E): void;
  /** completion tokens delivered so far, by reelay's count */
  deliveredTokens(): number;
  /** the upstream's last usage report, as received (null: none) */
  reported(): ReportedUsage | null;
  /** the upstream's running completion count as of the last delivered event (undefined: it sends none) */
  running(): unknown;
  /** the closing text of a stream that ended normally, with what it was billed */
  done(billed: ClosedRequest): string;
  /** the error event of a stream that broke after it began, with what was billed for it */
  failed(error: ApiError, billed: ClosedRequest): string;
  /** the stream ended: put what it said (response model, finish reasons) on the request's trace */
  traceEnd?(): void;
}

/** An upstream stream whose first event has arrived, and how to relay it. */
export interface OpenedStream<E> {
  events: AsyncIterator<E>;
  first: IteratorResult<E>;
  format: RelayFormat<E>;
}

export async function streamChat(deps: AppDeps, call: ChatCall): Promise<Response> {
  const p = await prepareChat(deps, call);
  return relayStream(deps, call, p, async (p, signal) => {
    const events = (await p.chat.stream(p.forwarded, { signal, requestId: call.requestId, routed: p.routed, trace: p.trace }))[Symbol.asyncIterator]();
    return { events, first: await events.next(), format: new ChatFormat(call.body, p.model.id, call.trace) };
  });
}

/**
 * Open the upstream stream on the prepared request (its fallbacks tried while nothing reached the
 * client), then relay it as the client pulls. `open` is called per candidate with the signal that
 * aborts the upstream request; it resolves once the first event is in.
 */
export async function relayStream<B>(deps: AppDeps, call: PipelineCall, p: PreparedChat<B>, open: (p: PreparedChat<B>, signal: AbortSignal) => Promise<OpenedStream<any>>): Promise<Response> {
  const upstream = new AbortController();
  let relay: Relay<unknown> | undefined;
  const onClientGone = () => (relay ? relay.clientGone() : upstream.abort(new DOMException("client disconnected", "AbortError")));
  call.signal.addEventListener("abort", onClientGone, { once: true });
  // the server's drain timeout (src/lifecycle.ts): the stream ends with an error event, billed on what was delivered
  const cutSignal = deps.lifecycle?.cutSignal;
  const onCut = () => (relay ? relay.cut(cutSignal!.reason) : upstream.abort(cutSignal!.reason));
  cutSignal?.addEventListener("abort", onCut, { once: true });
  let opened: OpenedStream<unknown>;
  try {
    if (call.signal.aborted) onClientGone();
    // the first event before the answer: a failure up to here reached the client as nothing, so a fallback model may serve
    opened = await withFallbacks(deps, call, p, (p) => open(p, upstream.signal));
  } catch (err) {
    call.signal.removeEventListener("abort", onClientGone);
    cutSignal?.removeEventListener("abort", onCut);
    throw failChat(deps, call, p, err, call.signal.aborted);
  }
  relay = new Relay(deps, call, p, opened, upstream, () => {
    call.signal.removeEventListener("abort", onClientGone);
    cutSignal?.removeEventListener("abort", onCut);
  });
  if (cutSignal?.aborted) relay.cut(cutSignal.reason);
  return new Response(relay.body, {
    headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-accel-buffering": "no", ...p.headers },
  });
}

/** Chat completion chunks: `data: <chunk>\n\n` with reelay's model id, usage shown as the client asked, `data: [DONE]` last. */
export class ChatFormat implements RelayFormat<ChatStreamEvent> {
  private readonly count = new DeliveryCount();
  private readonly wantsUsage: boolean;
  private readonly wantsRunningUsage: boolean;
  private readonly modelField: string;

  /** what the trace records of the answer (only with a trace) */
  private answer: { id?: string; model?: string; finish: string[]; text: string } | null = null;

  constructor(body: Pick<ChatCompletionRequest, "stream_options">, modelId: string, private readonly trace?: RequestTrace) {
    if (trace) this.answer = { finish: [], text: "" };
    const so = body.stream_options as Record<string, unknown> | null | undefined;
    this.wantsUsage = so?.include_usage === true;
    this.wantsRunningUsage = so?.continuous_usage_stats === true;
    this.modelField = `"model":${JSON.stringify(modelId)}`;
  }

  isEnd(e: ChatStreamEvent): boolean {
    return e.data === "[DONE]";
  }

  relay(e: ChatStreamEvent): string | null {
    const json = e.json;
    this.count.observe(json);
    if (this.answer) this.observe(json);
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
    return `data: ${data.includes(this.modelField) ? data : data.replace(MODEL_FIELD, this.modelField)}\n\n`;
  }

  delivered(e: ChatStreamEvent): void {
    this.count.delivered(e.json);
  }

  deliveredTokens(): number {
    return this.count.localTokens();
  }

  reported(): ReportedUsage | null {
    return this.count.reported;
  }

  running(): unknown {
    return this.count.running;
  }

  done(): string {
    return "data: [DONE]\n\n";
  }

  private observe(json: any) {
    const a = this.answer!;
    if (a.model === undefined && typeof json?.model === "string") a.model = json.model;
    if (a.id === undefined && typeof json?.id === "string") a.id = json.id;
    for (const c of Array.isArray(json?.choices) ? json.choices : []) {
      if (typeof c?.finish_reason === "string") a.finish.push(c.finish_reason);
      if (this.trace!.content && typeof c?.delta?.content === "string") a.text += c.delta.content;
    }
  }

  traceEnd(): void {
    const a = this.answer;
    if (!a) return;
    this.trace!.set({ [GEN_AI.responseModel]: a.model, [GEN_AI.responseId]: a.id, [GEN_AI.finishReasons]: a.finish });
    if (this.trace!.content) this.trace!.set({ [GEN_AI.outputMessages]: JSON.stringify([{ role: "assistant", content: a.text }]) });
  }

  failed(error: ApiError): string {
    return `data: ${JSON.stringify(error.toJSON())}\n\n`;
  }
}

type End = { kind: "done" } | { kind: "disconnected" } | { kind: "failed"; err: unknown };

const NOTHING_BILLED: ClosedRequest = { cost: 0, promptTokens: 0, completionTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, anomaly: null };

class Relay<E> {
  readonly body: ReadableStream<Uint8Array>;
  private readonly events: AsyncIterator<E>;
  private readonly format: RelayFormat<E>;
  private pending: IteratorResult<E> | null;
  private controller!: ReadableStreamDefaultController<Uint8Array>;
  private gone = false;
  private pulling = false;
  private ended = false;
  /** the server's drain timeout ended the stream (the error it ends with) */
  private cutBy: unknown = null;

  constructor(
    private readonly deps: AppDeps,
    private readonly call: PipelineCall,
    private readonly p: PreparedChat<unknown>,
    opened: OpenedStream<E>,
    private readonly upstream: AbortController,
    private readonly cleanup: () => void,
  ) {
    this.events = opened.events;
    this.format = opened.format;
    this.pending = opened.first;
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

  /** Write the next relayed event (skipping events that send nothing), or end the stream. */
  private async pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    while (!this.ended) {
      let next: IteratorResult<E>;
      try {
        next = this.pending ?? (await this.events.next());
        this.pending = null;
      } catch (err) {
        return this.end(controller, this.gone || this.call.signal.aborted ? { kind: "disconnected" } : { kind: "failed", err: this.cutBy ?? err });
      }
      if (this.gone) return this.end(controller, { kind: "disconnected" });
      if (this.cutBy) return this.end(controller, { kind: "failed", err: this.cutBy });
      if (next.done || this.format.isEnd(next.value)) return this.end(controller, { kind: "done" });
      const out = this.format.relay(next.value);
      if (out === null) continue;
      controller.enqueue(encoder.encode(out));
      this.format.delivered(next.value);
      return;
    }
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
    this.format.traceEnd?.();
    const delivered = this.format.deliveredTokens();
    const reported = this.format.reported();
    // the upstream's final count when the stream ended normally; else what was delivered, by the
    // upstream's running count when it sends one (vLLM continuous_usage_stats), else reelay's own
    const completion = end.kind === "done" && reported ? reported.completion : this.format.running();
    let billed = NOTHING_BILLED;
    try {
      billed = finishChat(this.call, this.p, {
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
      controller.enqueue(encoder.encode(apiError ? this.format.failed(apiError, billed) : this.format.done(billed)));
      controller.close();
    } catch {
      // the client went away while we were settling
    }
  }
}
