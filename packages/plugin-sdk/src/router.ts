/**
 * Routing among a model's upstream deployments (vLLM replicas, two providers, regions), with a
 * passive circuit breaker per deployment. Pure and in memory: state is per reelay instance and
 * shared with nothing (a breaker learns from this instance's own traffic, like Envoy's outlier
 * detection), and `acquire` allocates nothing.
 *
 *   const router = new UpstreamRouter(deployments, policy);
 *   const d = router.acquire(tried);              // null: none available (see retryAfterMs)
 *   … call d.target …
 *   router.release(d, { ok: true, ms });          // or { ok: false, kind, ms, retryAfterMs }
 *
 * Choice: smooth weighted round-robin (nginx's) among the available deployments proposes one; when
 * another has fewer requests outstanding per unit of weight it wins instead (least outstanding
 * requests). Sequential traffic therefore follows the weights exactly; concurrent traffic fills the
 * deployment with the most room. A deployment at its `maxConcurrent` is skipped.
 *
 * Breaker: `consecutiveFailures` failures in a row, or an error rate ≥ `errorRate` over the last
 * `windowMs` (with at least `minRequests` calls in it), opens the circuit for `cooldownMs`; a 429
 * or 503 with Retry-After opens it for exactly that long, at once. After the cooldown the circuit
 * is half-open: one probe request goes through; its success closes the circuit, its failure opens
 * it again for another cooldown.
 */

export type CircuitState = "closed" | "open" | "half_open";

export interface DeploymentSpec<T> {
  /** unique among the model's deployments; shown in metrics, logs and GET /admin/upstreams */
  name: string;
  /** relative share of traffic (> 0) */
  weight: number;
  /** requests in flight at once on this instance; the deployment is skipped at this number */
  maxConcurrent?: number;
  /** what the plugin needs to call it (URL, headers …) */
  target: T;
}

export interface BreakerPolicy {
  /** failures in a row that open the circuit */
  consecutiveFailures: number;
  /** error rate (0..1) over the window that opens the circuit */
  errorRate: number;
  /** calls the window must hold before its error rate counts */
  minRequests: number;
  windowMs: number;
  /** how long an opened circuit stays open before its half-open probe */
  cooldownMs: number;
  /** false: the circuit never opens (the router only counts); default true */
  enabled?: boolean;
}

/**
 * 5 failures in a row or half of ≥ 20 calls in 10 s; 5 s cooldown. Envoy's outlier detection
 * defaults to 5 consecutive 5xx and a 30 s base ejection; a model server restarts in seconds
 * (vLLM replica behind a load balancer), so the probe comes back sooner.
 */
export const DEFAULT_BREAKER: BreakerPolicy = { consecutiveFailures: 5, errorRate: 0.5, minRequests: 20, windowMs: 10_000, cooldownMs: 5_000 };

/** How an attempt on a deployment ended. `kind`: the PluginError kind, or `http_<status>` for upstream_http. */
export type AttemptOutcome =
  | { ok: true; ms: number }
  | { ok: false; kind: string; ms: number; /** the upstream's Retry-After on 429 / 503, ms */ retryAfterMs?: number; /** false: the deployment is not to blame (a client 4xx) */ countsAgainst?: boolean };

/** One deployment as GET /admin/upstreams and /metrics show it. */
export interface DeploymentStatus {
  name: string;
  weight: number;
  maxConcurrent: number | null;
  state: CircuitState;
  inFlight: number;
  requests: number;
  successes: number;
  /** failed attempts by kind (connect, timeout, http_503, stream_interrupted …) */
  errors: Record<string, number>;
  /** error rate over the breaker's window (null: no call in it) */
  recentErrorRate: number | null;
  recentRequests: number;
  /** moving average of successful attempts' latency (ms; null before the first) */
  latencyMs: number | null;
  /** every successful attempt's latency, as a histogram (percentiles on /metrics); absent from plugins built before 1.1 */
  latency?: LatencyHistogram;
  /** ms until an open circuit lets its probe through (0 when not open) */
  openForMs: number;
  /** times the circuit opened */
  opened: number;
}

/** Successful attempts' latencies in buckets, cumulative like Prometheus's. */
export interface LatencyHistogram {
  /** upper bounds of the buckets, seconds, ascending (the +Inf bucket is `count`) */
  le: readonly number[];
  /** attempts at or under each bound */
  counts: number[];
  count: number;
  sumSeconds: number;
}

/** upper bounds (seconds) of the latency histogram's buckets: the host's request-latency buckets */
export const LATENCY_BUCKETS_SECONDS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

const SLOTS = 10;
/** weight of the newest sample in the latency average: about the last 10 calls */
const LATENCY_ALPHA = 0.1;

export class Deployment<T> {
  readonly name: string;
  readonly weight: number;
  readonly maxConcurrent: number;
  readonly target: T;
  inFlight = 0;
  state: CircuitState = "closed";
  /** open: the probe is due at this time (performance.now()) */
  openUntil = 0;
  /** half-open: the probe request is out */
  probing = false;
  consecutive = 0;
  requests = 0;
  successes = 0;
  opened = 0;
  latencyMs = -1;
  /** successful attempts per latency bucket (not cumulative; the last one is over every bound) */
  readonly latencyBuckets = new Float64Array(LATENCY_BUCKETS_SECONDS.length + 1);
  latencySumMs = 0;
  readonly errors: Record<string, number> = {};
  /** smooth weighted round-robin's running weight */
  current = 0;
  // the window: SLOTS slots of windowMs / SLOTS, each with its calls and failures
  readonly slotIds = new Float64Array(SLOTS).fill(-1);
  readonly slotCalls = new Uint32Array(SLOTS);
  readonly slotFailures = new Uint32Array(SLOTS);

  constructor(spec: DeploymentSpec<T>) {
    this.name = spec.name;
    this.weight = spec.weight;
    this.maxConcurrent = spec.maxConcurrent ?? Infinity;
    this.target = spec.target;
  }
}

export class UpstreamRouter<T> {
  readonly deployments: ReadonlyArray<Deployment<T>>;
  private readonly totalWeight: number;
  private readonly slotMs: number;

  constructor(specs: ReadonlyArray<DeploymentSpec<T>>, readonly policy: BreakerPolicy = DEFAULT_BREAKER, private readonly now: () => number = () => performance.now()) {
    if (specs.length === 0) throw new Error("a router needs at least one deployment");
    this.deployments = specs.map((s) => new Deployment(s));
    this.totalWeight = this.deployments.reduce((n, d) => n + d.weight, 0);
    this.slotMs = Math.max(1, policy.windowMs / SLOTS);
  }

  /**
   * The deployment for the next attempt, counted in flight; null when none is available (every one
   * open, probing, at capacity, or in `skip`). `skip`: deployments already tried by this request.
   */
  acquire(skip?: ReadonlyArray<Deployment<T>>): Deployment<T> | null {
    const now = this.now();
    const list = this.deployments;
    let proposed: Deployment<T> | null = null;
    let least: Deployment<T> | null = null;
    let availableWeight = 0;
    for (let i = 0; i < list.length; i++) {
      const d = list[i]!;
      if (!this.available(d, now) || (skip !== undefined && skip.includes(d))) continue;
      availableWeight += d.weight;
      d.current += d.weight;
      if (proposed === null || d.current > proposed.current) proposed = d;
      if (least === null || d.inFlight / d.weight < least.inFlight / least.weight) least = d;
    }
    if (proposed === null) return null;
    proposed.current -= availableWeight;
    const d = least !== null && least.inFlight / least.weight < proposed.inFlight / proposed.weight ? least : proposed;
    if (d.state === "open") {
      d.state = "half_open";
      d.probing = true;
    } else if (d.state === "half_open") d.probing = true;
    d.inFlight++;
    d.requests++;
    return d;
  }

  /** The attempt on `d` ended: out of flight, and what the breaker learns from it. */
  release(d: Deployment<T>, outcome: AttemptOutcome): void {
    d.inFlight--;
    this.record(d, outcome);
  }

  /**
   * What the breaker learns from a call to `d` that was not routed (acquired): a video job's poll,
   * which must go to the worker that holds the job whatever its state. Counted as a request.
   */
  observe(d: Deployment<T>, outcome: AttemptOutcome): void {
    d.requests++;
    this.record(d, outcome);
  }

  private record(d: Deployment<T>, outcome: AttemptOutcome): void {
    const now = this.now();
    if (outcome.ok) {
      d.successes++;
      d.latencyMs = d.latencyMs < 0 ? outcome.ms : d.latencyMs + LATENCY_ALPHA * (outcome.ms - d.latencyMs);
      const sec = outcome.ms / 1000;
      let b = 0;
      while (b < LATENCY_BUCKETS_SECONDS.length && sec > LATENCY_BUCKETS_SECONDS[b]!) b++;
      d.latencyBuckets[b]!++;
      d.latencySumMs += outcome.ms;
      d.consecutive = 0;
      this.count(d, now, false);
      if (d.state === "half_open") {
        d.state = "closed";
        d.probing = false;
        this.clearWindow(d);
      }
      return;
    }
    if (outcome.kind !== "cancelled") d.errors[outcome.kind] = (d.errors[outcome.kind] ?? 0) + 1;
    if (outcome.countsAgainst === false) {
      // the request's fault, not the deployment's: a half-open probe still proved it answers
      if (d.state === "half_open") {
        d.state = "closed";
        d.probing = false;
      }
      return;
    }
    d.consecutive++;
    const failures = this.count(d, now, true);
    if (this.policy.enabled === false) return;
    if (outcome.retryAfterMs !== undefined && outcome.retryAfterMs > 0) return this.open(d, now, outcome.retryAfterMs);
    if (d.state === "half_open") return this.open(d, now, this.policy.cooldownMs);
    if (d.state === "closed" && (d.consecutive >= this.policy.consecutiveFailures || (failures.calls >= this.policy.minRequests && failures.failures >= this.policy.errorRate * failures.calls))) {
      this.open(d, now, this.policy.cooldownMs);
    }
  }

  /** ms until some deployment may take a request again (for Retry-After): the earliest probe, or 1 s when all are busy. */
  retryAfterMs(): number {
    const now = this.now();
    let soonest = Infinity;
    for (const d of this.deployments) {
      if (d.state === "open") soonest = Math.min(soonest, Math.max(0, d.openUntil - now));
      else soonest = Math.min(soonest, 1000);
    }
    return Math.max(1000, soonest === Infinity ? 1000 : soonest);
  }

  /** Every deployment's state and counters (GET /admin/upstreams, /metrics). */
  status(): DeploymentStatus[] {
    const now = this.now();
    return this.deployments.map((d) => {
      if (d.state === "open" && now >= d.openUntil && !d.probing) {
        // reported as it would be acquired: due for its probe
        return this.describe(d, now, "half_open");
      }
      return this.describe(d, now, d.state);
    });
  }

  private describe(d: Deployment<T>, now: number, state: CircuitState): DeploymentStatus {
    const w = this.window(d, now);
    return {
      name: d.name,
      weight: d.weight,
      maxConcurrent: Number.isFinite(d.maxConcurrent) ? d.maxConcurrent : null,
      state,
      inFlight: d.inFlight,
      requests: d.requests,
      successes: d.successes,
      errors: { ...d.errors },
      recentErrorRate: w.calls ? w.failures / w.calls : null,
      recentRequests: w.calls,
      latencyMs: d.latencyMs < 0 ? null : Math.round(d.latencyMs * 10) / 10,
      latency: histogram(d),
      openForMs: state === "open" ? Math.max(0, Math.ceil(d.openUntil - now)) : 0,
      opened: d.opened,
    };
  }

  private available(d: Deployment<T>, now: number): boolean {
    if (d.inFlight >= d.maxConcurrent) return false;
    if (d.state === "closed") return true;
    if (d.state === "open") return now >= d.openUntil;
    return !d.probing;
  }

  private open(d: Deployment<T>, now: number, ms: number): void {
    if (d.state !== "open") d.opened++;
    d.state = "open";
    d.probing = false;
    // a stale openUntil is in the past; a live one (a longer Retry-After) is kept
    d.openUntil = Math.max(d.openUntil, now + ms);
    d.consecutive = 0;
  }

  /** Add one call to the window; returns the window's totals. */
  private count(d: Deployment<T>, now: number, failed: boolean): { calls: number; failures: number } {
    const id = Math.floor(now / this.slotMs);
    const i = id % SLOTS;
    if (d.slotIds[i] !== id) {
      d.slotIds[i] = id;
      d.slotCalls[i] = 0;
      d.slotFailures[i] = 0;
    }
    d.slotCalls[i]!++;
    if (failed) d.slotFailures[i]!++;
    return failed ? this.window(d, now) : ZERO;
  }

  private window(d: Deployment<T>, now: number): { calls: number; failures: number } {
    const id = Math.floor(now / this.slotMs);
    let calls = 0;
    let failures = 0;
    for (let i = 0; i < SLOTS; i++) {
      if (id - d.slotIds[i]! < SLOTS) {
        calls += d.slotCalls[i]!;
        failures += d.slotFailures[i]!;
      }
    }
    return { calls, failures };
  }

  private clearWindow(d: Deployment<T>): void {
    d.slotIds.fill(-1);
  }

  /** the weights' sum (for tests and reports) */
  get weight(): number {
    return this.totalWeight;
  }
}

const ZERO = { calls: 0, failures: 0 };

function histogram(d: Deployment<unknown>): LatencyHistogram {
  const counts: number[] = [];
  let n = 0;
  for (let i = 0; i < LATENCY_BUCKETS_SECONDS.length; i++) counts.push((n += d.latencyBuckets[i]!));
  return { le: LATENCY_BUCKETS_SECONDS, counts, count: n + d.latencyBuckets[LATENCY_BUCKETS_SECONDS.length]!, sumSeconds: d.latencySumMs / 1000 };
}
