/**
 * One call to the upstream: the POST (with retries on refused connections), the deadlines, and the
 * caller's AbortSignal, all funnelled into one AbortController so that whichever fires first stops
 * the upstream request at once and decides the error thrown.
 */
import { PluginError, type PluginContext } from "../../src/plugin-sdk/index.ts";
import { isConnectionRefused, networkFailure, upstreamHttpError } from "./errors.ts";
import type { Timeouts } from "./options.ts";
import type { Redact } from "./redact.ts";

/** 2 retries, 100 then 300 ms: long enough for a restarting local server, short next to a request. */
const RETRY_BACKOFF_MS = [100, 300];

type Phase = "connect" | "first byte" | "idle";
/** what this code needs of a body reader (the DOM and Bun typings of getReader() disagree) */
interface BodyReader {
  read(): Promise<{ done: boolean; value?: Uint8Array }>;
}

/** The reason a finished call's request is aborted with: one shared object, no stack captured per call. */
const FINISHED = new DOMException("upstream call finished", "AbortError");

export class UpstreamCall {
  private readonly ac = new AbortController();
  private readonly onCallerAbort = () => this.ac.abort(this.caller.reason);
  /**
   * One timer for both deadlines (the total and the current phase's), set for the earlier one and
   * re-checked when it fires: re-arming a phase per body chunk only moves a number, where a
   * clearTimeout + setTimeout pair per chunk and per deadline cost ~1 µs each on the chat path.
   */
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Infinity;
  private readonly totalDeadline: number;
  private phase: Phase | null = null;
  private phaseMs = 0;
  private phaseDeadline = Infinity;
  /** headers received: from here on nothing is retried */
  answered = false;

  constructor(private readonly caller: AbortSignal, private readonly timeouts: Timeouts, private readonly redact: Redact = (t) => t) {
    this.totalDeadline = performance.now() + timeouts.totalMs;
    this.schedule();
    if (caller.aborted) this.onCallerAbort();
    else caller.addEventListener("abort", this.onCallerAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.ac.signal;
  }

  /** (Re)start the single phase deadline; each body chunk re-arms "idle". */
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

  /** Clear the timer and the listener; abort the upstream request if it is still open. */
  finish(): void {
    this.disarm();
    clearTimeout(this.timer);
    this.timer = undefined;
    this.caller.removeEventListener("abort", this.onCallerAbort);
    if (!this.ac.signal.aborted) this.ac.abort(FINISHED);
  }

  /** Make sure the timer fires no later than the earliest deadline (a later firing re-checks). */
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

  /** What to throw for an error from fetch or a body read. */
  failure(err: unknown): unknown {
    if (this.caller.aborted) return this.caller.reason;
    const reason = this.ac.signal.reason;
    if (this.ac.signal.aborted && reason instanceof PluginError) return reason;
    return networkFailure(err, this.answered, this.redact);
  }

  private timeout(what: string): void {
    this.ac.abort(new PluginError("timeout", `upstream ${what} timeout`, { retryable: !this.answered }));
  }

  /** POST JSON; retries refused connections only; throws PluginError for non-2xx answers. */
  async post(ctx: PluginContext, url: string, body: unknown, headers: Record<string, string>): Promise<Response> {
    const payload = JSON.stringify(body);
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await ctx.fetch(url, { method: "POST", headers, body: payload, signal: this.signal });
      } catch (err) {
        if (!this.signal.aborted && isConnectionRefused(err) && attempt < RETRY_BACKOFF_MS.length) {
          ctx.logger.debug("upstream refused the connection, retrying", { url, attempt: attempt + 1 });
          await sleep(RETRY_BACKOFF_MS[attempt]!, this.signal);
          continue;
        }
        throw this.failure(err);
      }
      this.answered = true;
      if (!res.ok) throw await upstreamHttpError(res, this.redact);
      return res;
    }
  }

  /** The whole body in one read, under one "idle" deadline. */
  async text(res: Response): Promise<string> {
    this.arm("idle");
    try {
      return await res.text();
    } catch (err) {
      throw this.failure(err);
    } finally {
      this.disarm();
    }
  }

  /** One read of a body under the `phase` deadline; a read error becomes the call's failure. */
  async read(reader: BodyReader, phase: Phase): Promise<{ done: boolean; value?: Uint8Array }> {
    this.arm(phase);
    try {
      return await reader.read();
    } catch (err) {
      throw this.failure(err);
    } finally {
      this.disarm();
    }
  }

  /** Body chunks, with the `first` deadline before the first one and "idle" between the others. */
  async *chunks(res: Response, first: Phase): AsyncGenerator<Uint8Array> {
    if (!res.body) return;
    const reader = res.body.getReader();
    try {
      for (let r = await this.read(reader, first); !r.done; r = await this.read(reader, "idle")) yield r.value!;
    } finally {
      reader.cancel().catch(() => {});
    }
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
