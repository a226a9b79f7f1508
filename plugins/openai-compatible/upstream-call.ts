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

export class UpstreamCall {
  private readonly ac = new AbortController();
  private phaseTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly totalTimer: ReturnType<typeof setTimeout>;
  private readonly onCallerAbort = () => this.ac.abort(this.caller.reason);
  /** headers received: from here on nothing is retried */
  answered = false;

  constructor(private readonly caller: AbortSignal, private readonly timeouts: Timeouts, private readonly redact: Redact = (t) => t) {
    this.totalTimer = setTimeout(() => this.timeout(`total (${timeouts.totalMs} ms)`), timeouts.totalMs);
    if (caller.aborted) this.onCallerAbort();
    else caller.addEventListener("abort", this.onCallerAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.ac.signal;
  }

  /** (Re)start the single phase deadline; each body chunk re-arms "idle". */
  arm(phase: Phase): void {
    clearTimeout(this.phaseTimer);
    const ms = phase === "connect" ? this.timeouts.connectMs : phase === "first byte" ? this.timeouts.firstByteMs : this.timeouts.idleMs;
    this.phaseTimer = setTimeout(() => this.timeout(`${phase} (${ms} ms)`), ms);
  }

  disarm(): void {
    clearTimeout(this.phaseTimer);
    this.phaseTimer = undefined;
  }

  /** Clear every timer and listener; abort the upstream request if it is still open. */
  finish(): void {
    this.disarm();
    clearTimeout(this.totalTimer);
    this.caller.removeEventListener("abort", this.onCallerAbort);
    if (!this.ac.signal.aborted) this.ac.abort(new Error("upstream call finished"));
  }

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

  /** Body chunks, with the `first` deadline before the first one and "idle" between the others. */
  async *chunks(res: Response, first: Phase): AsyncGenerator<Uint8Array> {
    if (!res.body) return;
    const reader = res.body.getReader();
    let phase = first;
    try {
      while (true) {
        this.arm(phase);
        let r: Awaited<ReturnType<typeof reader.read>>;
        try {
          r = await reader.read();
        } catch (err) {
          throw this.failure(err);
        }
        this.disarm();
        if (r.done) return;
        phase = "idle";
        yield r.value;
      }
    } finally {
      this.disarm();
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
