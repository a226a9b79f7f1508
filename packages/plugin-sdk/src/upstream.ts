/**
 * One HTTP call to a provider's upstream, with the four deadlines a model server needs and every
 * failure turned into the PluginError kind the host expects:
 *
 *   const res = await callUpstream({ url, json: body, stream: true }, call, { timeouts, redact });
 *   for await (const event of res.sse()) …          // or res.ndjson(), res.json(), res.text()
 *
 * - connect: request start → response headers, for streamed calls (a non-streamed upstream sends
 *   its headers only when the whole answer is done, so only `total` bounds that wait)
 * - first byte: headers → first body byte (queueing + prefill: time to first token)
 * - idle: between two body chunks
 * - total: the whole call, body included
 * Whichever fires first, or the caller's signal, aborts the request at once.
 *
 * Failures: refused connections are retried (100 then 300 ms: nothing reached the upstream); then
 * `connect`. A reset before any answer is sent once more at once (a pooled keep-alive connection the
 * upstream closed as it was reused; a body given as a stream is not sent twice), then `connect`. A
 * deadline before the headers is `timeout`, retryable. A non-2xx answer is
 * `upstream_http` with the upstream's message (error-body.ts). After the headers nothing is
 * retryable; once body bytes have arrived, a reset, a deadline or a truncated stream is
 * `stream_interrupted`. A router spreading calls over several deployments sits in front of this:
 * it passes `retryRefusedMs: []` and tries another deployment on a `retryable` error.
 */
import type { CallTrace, PluginLogger } from "./capabilities.ts";
import { upstreamHttpError } from "./error-body.ts";
import { isPluginError, PluginError } from "./errors.ts";
import { readNdjson } from "./ndjson.ts";
import { readJsonSse, readMessagesSse, readSse, type SseOptions } from "./sse.ts";

export interface UpstreamTimeouts {
  connectMs: number;
  firstByteMs: number;
  idleMs: number;
  totalMs: number;
}

/** 10 s to connect, 60 s to the first token, 30 s between chunks, 10 min in all. */
export const DEFAULT_UPSTREAM_TIMEOUTS: UpstreamTimeouts = { connectMs: 10_000, firstByteMs: 60_000, idleMs: 30_000, totalMs: 600_000 };

export interface UpstreamRequest {
  url: string;
  /** default POST when there is a body, else GET */
  method?: string;
  headers?: Record<string, string>;
  /** sent as JSON (content-type application/json) */
  json?: unknown;
  body?: string | Uint8Array<ArrayBuffer>;
  /** the answer is a stream: the connect deadline runs until the headers */
  stream?: boolean;
}

export interface UpstreamOptions {
  timeouts?: Partial<UpstreamTimeouts>;
  /** applied to every text that leaves the call (error messages, events): hide your API key */
  redact?: (text: string) => string;
  /** default: globalThis.fetch (pass ctx.fetch) */
  fetch?: typeof fetch;
  /** waits before each retry of a refused connection; default [100, 300]; [] for none */
  retryRefusedMs?: number[];
}

type Phase = "connect" | "first byte" | "idle";
const FINISHED = new DOMException("upstream call finished", "AbortError");
/** the largest non-streamed answer read by default: 16 MiB (128 choices × 32k tokens of text) */
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

export async function callUpstream(req: UpstreamRequest, call: { signal: AbortSignal; logger?: PluginLogger; trace?: Pick<CallTrace, "outgoing"> }, opts: UpstreamOptions = {}): Promise<UpstreamResponse> {
  const d = new Deadlines(call.signal, { ...DEFAULT_UPSTREAM_TIMEOUTS, ...opts.timeouts }, opts.redact ?? ((t) => t));
  const doFetch = opts.fetch ?? globalThis.fetch;
  const backoff = opts.retryRefusedMs ?? [100, 300];
  // the trace context first: a plugin's own traceparent header (if it sets one) wins
  const headers = { ...(call.trace ? call.trace.outgoing(req.url) : null), ...(req.json !== undefined ? { "content-type": "application/json" } : {}), ...req.headers };
  const body = req.json !== undefined ? JSON.stringify(req.json) : req.body;
  const init = { method: req.method ?? (body === undefined ? "GET" : "POST"), headers, body, signal: d.signal };
  try {
    if (req.stream) d.arm("connect");
    let refusedTries = 0;
    let resent = body instanceof ReadableStream; // a stream cannot be sent twice
    for (;;) {
      let res: Response;
      try {
        res = await doFetch(req.url, init);
      } catch (err) {
        if (!d.signal.aborted && isRefused(err) && refusedTries < backoff.length) {
          call.logger?.debug("upstream refused the connection, retrying", { attempt: refusedTries + 1 });
          await sleep(backoff[refusedTries++]!, d.signal);
          continue;
        }
        // a pooled keep-alive connection the upstream had just closed (uvicorn closes idle ones after
        // 5 s, Bun.serve after 10 s) resets before any answer: sent again once, on a new connection
        if (!d.signal.aborted && !resent && isReset(err)) {
          resent = true;
          call.logger?.debug("upstream reset the connection before answering, sending once more");
          continue;
        }
        throw d.failure(err);
      }
      d.answered = true;
      d.disarm();
      if (!res.ok) throw await upstreamHttpError(res, d.redact);
      return new UpstreamResponse(d, res);
    }
  } catch (err) {
    d.finish();
    throw err;
  }
}

export class UpstreamResponse {
  readonly status: number;
  readonly headers: Headers;
  constructor(private readonly d: Deadlines, readonly response: Response) {
    this.status = response.status;
    this.headers = response.headers;
  }

  /** The whole body as text (at most maxBytes, else `malformed`), under the idle and total deadlines. */
  async text(maxBytes = DEFAULT_MAX_BODY_BYTES): Promise<string> {
    try {
      const declared = Number(this.headers.get("content-length") ?? 0);
      if (declared > maxBytes) throw tooLarge(maxBytes);
      if (declared > 0 && declared <= ONE_READ_BYTES) return this.d.redact(await this.d.whole(this.response));
      const decoder = new TextDecoder();
      const parts: string[] = [];
      let bytes = 0;
      for await (const chunk of this.chunks("idle")) {
        bytes += chunk.byteLength;
        if (bytes > maxBytes) throw tooLarge(maxBytes);
        parts.push(decoder.decode(chunk, { stream: true }));
      }
      return this.d.redact(parts.join("") + decoder.decode());
    } finally {
      this.close();
    }
  }

  /** The body parsed as JSON; not JSON → `malformed`. */
  async json<T = unknown>(maxBytes = DEFAULT_MAX_BODY_BYTES): Promise<T> {
    const text = await this.text(maxBytes);
    try {
      return JSON.parse(text) as T;
    } catch (err) {
      throw new PluginError("malformed", `upstream answer is not JSON: ${JSON.stringify(text.slice(0, 80))}`, { cause: err });
    }
  }

  /** Body chunks as they arrive: the first-byte deadline before the first one, idle between the others. */
  async *chunks(first: Phase = "first byte"): AsyncGenerator<Uint8Array> {
    const body = this.response.body;
    if (!body) return;
    const reader = body.getReader();
    try {
      for (let r = await this.d.read(reader, first); !r.done; r = await this.d.read(reader, "idle")) {
        if (r.value && r.value.byteLength > 0) {
          this.d.bodyBytes += r.value.byteLength;
          yield r.value;
        }
      }
    } finally {
      reader.cancel().catch(() => {});
      this.close();
    }
  }

  /** OpenAI-style server-sent events (JSON `data:` payloads, `[DONE]` last), as ChatStreamEvents. */
  sse(opts: Omit<SseOptions, "redact"> = {}) {
    return readSse(this.chunks(), { ...opts, redact: this.d.redact });
  }

  /** Anthropic Messages server-sent events (named events, `message_stop` last), as MessagesStreamEvents. */
  messagesSse(opts: Omit<SseOptions, "redact"> = {}) {
    return readMessagesSse(this.chunks(), { ...opts, redact: this.d.redact });
  }

  /** Server-sent events of JSON objects without an end marker (Google's `alt=sse`): the stream ends with the body. */
  jsonSse(opts: Omit<SseOptions, "redact"> = {}) {
    return readJsonSse(this.chunks(), { ...opts, redact: this.d.redact });
  }

  /** Newline-delimited JSON (Ollama's streams): one parsed value per line. */
  ndjson<T = unknown>(opts: { maxLineBytes?: number } = {}): AsyncGenerator<T> {
    return readNdjson<T>(this.chunks(), { ...opts, redact: this.d.redact });
  }

  /** Stop: abort the request if it is still open and clear the deadlines (safe to call twice). */
  close(): void {
    this.d.finish();
  }
}

/**
 * An answer that declares a Content-Length up to this is read in one res.text() under one idle
 * deadline: it cannot outgrow its declared length, and a JS stream reader costs ~8 µs more CPU per
 * chat request (Bun materialises the body as a ReadableStream). 64 KB is far beyond a usual
 * completion and arrives well within an idle deadline even from a slow server.
 */
const ONE_READ_BYTES = 64 * 1024;

const tooLarge = (maxBytes: number) => new PluginError("malformed", `upstream answer is larger than ${maxBytes} bytes`);

const codeOf = (err: unknown) => (err as { code?: string } | null)?.code;

/** A connection reset (ECONNRESET, or Bun's ConnectionClosed). */
function isReset(err: unknown): boolean {
  const code = codeOf(err);
  return code === "ECONNRESET" || code === "ConnectionClosed";
}

/** Only a refused connection is surely unseen by the upstream. */
function isRefused(err: unknown): boolean {
  const code = codeOf(err);
  return code === "ECONNREFUSED" || code === "ConnectionRefused";
}

/**
 * The caller's signal and every deadline funnelled into one AbortController, with ONE timer set
 * for the earliest deadline and re-checked when it fires (re-arming per body chunk only moves a
 * number; a clearTimeout + setTimeout pair per chunk cost ~1 µs each on the chat path).
 */
class Deadlines {
  private readonly ac = new AbortController();
  private readonly onCallerAbort = () => this.ac.abort(this.caller.reason);
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Infinity;
  private readonly totalDeadline: number;
  private phase: Phase | null = null;
  private phaseMs = 0;
  private phaseDeadline = Infinity;
  /** headers received: nothing is retryable from here on */
  answered = false;
  bodyBytes = 0;

  constructor(private readonly caller: AbortSignal, private readonly timeouts: UpstreamTimeouts, readonly redact: (t: string) => string) {
    this.totalDeadline = performance.now() + timeouts.totalMs;
    this.schedule();
    if (caller.aborted) this.onCallerAbort();
    else caller.addEventListener("abort", this.onCallerAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.ac.signal;
  }

  arm(phase: Phase): void {
    this.phase = phase;
    this.phaseMs = phase === "connect" ? this.timeouts.connectMs : phase === "first byte" ? this.timeouts.firstByteMs : this.timeouts.idleMs;
    this.phaseDeadline = performance.now() + this.phaseMs;
    this.schedule();
  }

  disarm(): void {
    this.phase = null;
    this.phaseDeadline = Infinity;
  }

  finish(): void {
    this.disarm();
    clearTimeout(this.timer);
    this.timer = undefined;
    this.caller.removeEventListener("abort", this.onCallerAbort);
    if (!this.ac.signal.aborted) this.ac.abort(FINISHED);
  }

  async read(reader: { read(): Promise<{ done: boolean; value?: Uint8Array }> }, phase: Phase): Promise<{ done: boolean; value?: Uint8Array }> {
    this.arm(phase);
    try {
      return await reader.read();
    } catch (err) {
      throw this.failure(err);
    } finally {
      this.disarm();
    }
  }

  async whole(res: Response): Promise<string> {
    this.arm("idle");
    try {
      return await res.text();
    } catch (err) {
      throw this.failure(err);
    } finally {
      this.disarm();
    }
  }

  /** What to throw for an error from fetch or a body read. */
  failure(err: unknown): unknown {
    if (this.caller.aborted) return this.caller.reason;
    const reason = this.ac.signal.reason;
    if (this.ac.signal.aborted && isPluginError(reason)) return reason;
    if (isPluginError(err)) return err;
    const code = codeOf(err);
    const what = isRefused(err) ? "connection refused"
      : isReset(err) ? "connection reset"
      : `connection failed (${this.redact(String(code ?? (err as Error)?.message ?? "unknown"))})`;
    if (this.bodyBytes > 0) return new PluginError("stream_interrupted", `upstream ${what} after ${this.bodyBytes} bytes of the answer`, { cause: err });
    if (code === "ETIMEDOUT" || (err as Error | null)?.name === "TimeoutError") return new PluginError("timeout", "upstream timed out", { retryable: !this.answered, cause: err });
    return new PluginError("connect", this.answered ? `upstream ${what} after the headers` : `upstream ${what}`, { retryable: !this.answered, cause: err });
  }

  private schedule(): void {
    if (this.ac.signal.aborted) return;
    const at = Math.min(this.totalDeadline, this.phaseDeadline);
    if (this.timer !== undefined && this.timerAt <= at) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(this.onTimer, Math.max(0, at - performance.now()));
  }

  private readonly onTimer = () => {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = performance.now();
    if (now >= this.totalDeadline) return this.timeout(`total (${this.timeouts.totalMs} ms)`);
    if (this.phase && now >= this.phaseDeadline) return this.timeout(`${this.phase} (${this.phaseMs} ms)`);
    this.schedule();
  };

  private timeout(what: string): void {
    const err = this.bodyBytes > 0
      ? new PluginError("stream_interrupted", `upstream ${what} timeout after ${this.bodyBytes} bytes of the answer`)
      : new PluginError("timeout", `upstream ${what} timeout`, { retryable: !this.answered });
    this.ac.abort(err);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}
