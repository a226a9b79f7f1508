/**
 * One request over a model's deployments: an attempt on the deployment the router picks, and on a
 * failure that is safe to repeat another attempt on a deployment not yet tried, within a budget
 * (`maxAttempts`, `deadlineMs` since the first attempt).
 *
 * Safe to repeat: what the upstream surely did not answer: a refused or reset connection, a
 * timeout before the headers, 429 and 5xx (PluginError `retryable`), and what one deployment's own
 * setup refused — 401/403 (its key) and 404/405 (its URL or model name) — which another deployment
 * may serve (when none does, the client gets that error as with one deployment). Never once an attempt has
 * succeeded (for a stream: once its first event is in hand), so nothing the client was sent is
 * ever sent twice. A client 4xx is answered as it is, and does not count against the deployment.
 *
 *   const { value } = await routedCall(router, call, async (lease) => {
 *     const res = await callUpstream({ url: lease.deployment.target.url + "/x", … }, call, …);
 *     return res.json();
 *   });
 *
 * A stream keeps its deployment busy until it ends: pass `{ holdOnSuccess: true }`, and call
 * `lease.end(outcome)` when the stream finishes (the lease settles once; later calls do nothing).
 */
import type { AttemptTrace, CallOptions, PluginLogger } from "./capabilities.ts";
import { isPluginError, PluginError } from "./errors.ts";
import type { AttemptOutcome, Deployment, UpstreamRouter } from "./router.ts";

export interface RetryBudget {
  /** attempts per request, over distinct deployments */
  maxAttempts: number;
  /** no new attempt starts later than this after the first (ms) */
  deadlineMs: number;
}

/** 3 attempts within 30 s: LiteLLM's router and Portkey's retry default to 2–3 retries. */
export const DEFAULT_RETRY: RetryBudget = { maxAttempts: 3, deadlineMs: 30_000 };

export class Lease<T> {
  private settled = false;
  readonly startedAt: number;
  /** when the attempt succeeded (a stream: its first event); the latency the breaker records */
  answeredAt: number | null = null;

  constructor(private readonly router: UpstreamRouter<T>, readonly deployment: Deployment<T>, readonly attempt: number, private readonly trace?: AttemptTrace) {
    this.startedAt = performance.now();
  }

  /** The attempt's result for the breaker: a success, or the failure `err` (a PluginError or the caller's abort). */
  end(err?: unknown, signal?: AbortSignal): void {
    if (this.settled) return;
    this.settled = true;
    this.trace?.end(err);
    const ms = (this.answeredAt ?? performance.now()) - this.startedAt;
    if (err === undefined) return this.router.release(this.deployment, { ok: true, ms });
    if (signal?.aborted || !isPluginError(err)) {
      // the client went away, or a bug: says nothing about the deployment
      return this.router.release(this.deployment, { ok: false, kind: isPluginError(err) ? "cancelled" : "plugin_bug", ms, countsAgainst: false });
    }
    this.router.release(this.deployment, outcomeOf(err, ms));
  }
}

/** What the breaker learns from a PluginError. */
export function outcomeOf(err: PluginError, ms: number): AttemptOutcome {
  if (err.kind === "upstream_http") {
    const status = err.status ?? 0;
    const counts = status >= 500 || status === 429 || status === 401 || status === 403;
    const retryAfterMs = (status === 429 || status === 503) && err.retryAfterSeconds ? err.retryAfterSeconds * 1000 : undefined;
    return { ok: false, kind: `http_${status}`, ms, retryAfterMs, countsAgainst: counts };
  }
  // an upstream that says how long it is overloaded is left alone that long, as after a 503 with Retry-After
  const retryAfterMs = err.kind === "overloaded" && err.retryAfterSeconds ? err.retryAfterSeconds * 1000 : undefined;
  return { ok: false, kind: err.kind, ms, retryAfterMs, countsAgainst: err.kind !== "invalid_request" };
}

/** Refused by one deployment's configuration (key, URL, model name), not by the request. */
function deploymentFault(err: PluginError): boolean {
  return err.kind === "upstream_http" && [401, 403, 404, 405].includes(err.status ?? 0);
}

export interface RoutedResult<R, T> {
  value: R;
  lease: Lease<T>;
  attempts: number;
}

export async function routedCall<T, R>(
  router: UpstreamRouter<T>,
  call: Pick<CallOptions, "signal" | "routed" | "trace"> & { logger?: PluginLogger },
  attempt: (lease: Lease<T>) => Promise<R>,
  opts: { budget?: RetryBudget; holdOnSuccess?: boolean } = {},
): Promise<RoutedResult<R, T>> {
  const budget = opts.budget ?? DEFAULT_RETRY;
  const tried: Deployment<T>[] = [];
  const startedAt = performance.now();
  let last: unknown;
  for (let n = 1; n <= budget.maxAttempts; n++) {
    const d = router.acquire(tried);
    if (d === null) break;
    tried.push(d);
    const lease = new Lease(router, d, n, call.trace?.attempt({ deployment: d.name, attempt: n }));
    try {
      const value = await attempt(lease);
      lease.answeredAt = performance.now();
      if (!opts.holdOnSuccess) lease.end();
      call.routed?.({ deployment: d.name, attempts: n });
      return { value, lease, attempts: n };
    } catch (err) {
      lease.end(err, call.signal);
      last = err;
      if (call.signal.aborted || !isPluginError(err) || !(err.retryable || deploymentFault(err))) {
        call.routed?.({ deployment: d.name, attempts: n });
        throw err;
      }
      if (performance.now() - startedAt >= budget.deadlineMs) break;
      if (n < budget.maxAttempts) call.logger?.info("upstream deployment failed, trying another", { deployment: d.name, kind: err.kind, status: err.status });
    }
  }
  if (tried.length) call.routed?.({ deployment: tried[tried.length - 1]!.name, attempts: tried.length });
  if (last !== undefined) throw last;
  const retryAfterSeconds = Math.ceil(router.retryAfterMs() / 1000);
  throw new PluginError("overloaded", "every upstream deployment of this model is unavailable (circuit open or at maxConcurrent)", { code: "no_upstream_available", retryAfterSeconds });
}

/**
 * A stream whose attempt succeeded with its first event (routedCall with `holdOnSuccess`): the
 * events, the deployment counted in flight until the stream ends. A failure mid-stream counts
 * against the deployment (and is never retried: the client has part of the answer); a consumer
 * that stops early ends it as a success; the caller's abort says nothing about the deployment.
 */
export function leasedStream<E, T>(events: AsyncIterator<E>, first: IteratorResult<E>, lease: Lease<T>, signal: AbortSignal): AsyncIterable<E> {
  let pending: IteratorResult<E> | null = first;
  const iterator: AsyncIterator<E> = {
    async next() {
      let r: IteratorResult<E>;
      if (pending !== null) {
        r = pending;
        pending = null;
      } else {
        try {
          r = await events.next();
        } catch (err) {
          lease.end(err, signal);
          throw err;
        }
      }
      if (r.done) lease.end();
      return r;
    },
    async return(value?: unknown) {
      lease.end();
      await events.return?.(value).catch(() => {});
      return { done: true, value: undefined };
    },
  };
  return { [Symbol.asyncIterator]: () => iterator };
}

/**
 * What to throw for a failure while a stream's first event was awaited: a deadline or a reset
 * there (callUpstream calls them not retryable once the headers came) has still sent the client
 * nothing, so another deployment may answer: the same error, retryable.
 */
export function retryableBeforeFirstEvent(err: unknown): unknown {
  const e = err as PluginError;
  if (isPluginError(err) && (e.kind === "timeout" || e.kind === "connect") && e.retryable === false) {
    return new PluginError(e.kind, e.message, { retryable: true, cause: err });
  }
  return err;
}
