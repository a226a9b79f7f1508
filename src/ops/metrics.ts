/**
 * Prometheus metrics. One Registry per createOps call (never prom-client's global one), so several
 * apps in one process (tests) keep separate counters.
 *
 * Gauges that describe the database (queue depth, open holds, scheduler lag) are set just before each
 * scrape by `refresh` (see db-gauges.ts), not kept in memory: with several instances sharing one
 * Postgres, every instance reports the same, true value.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { Counter, Gauge, Registry, type Metric } from "prom-client";
import type { Db } from "../db/index.ts";
import type { LimiterHealth } from "../rate-limit/index.ts";
import { openHolds, videoQueue } from "./db-gauges.ts";
import { plainCounter, plainHistogram } from "./plain-metrics.ts";
import { createRequestMetrics, histogramRows } from "./request-metrics.ts";
import type { DeploymentStatus, LatencyHistogram } from "../plugin-sdk/index.ts";

/** each model routed over upstream deployments, with their state (registry/upstream-report.ts) */
export type UpstreamSource = Array<{ model: string; deployments: DeploymentStatus[] }>;

/** 5 ms … 2 min: /v1/models answers in ~1 ms, a long chat stream or a video submit with an image_url in tens of seconds */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export type OpsMetrics = ReturnType<typeof createMetrics>;

export function createMetrics(limiterHealth: () => LimiterHealth) {
  const registry = new Registry();
  const registers = [registry];

  const requests = createRequestMetrics(registry, LATENCY_BUCKETS);
  // updated on every request: plain counts rendered at scrape time (plain-metrics.ts)
  const upstreamDuration = plainHistogram(registry, "reelay_upstream_duration_seconds", "Plugin/upstream call latency", ["plugin", "model", "outcome"], LATENCY_BUCKETS);
  const upstreamErrors = plainCounter(registry, "reelay_upstream_errors_total", "Failed plugin/upstream calls", ["plugin", "model", "kind"]);
  const tokens = plainCounter(registry, "reelay_tokens_total", "Tokens billed", ["model", "kind", "type"]);
  const credits = plainCounter(registry, "reelay_credits_charged_micros_total", "Credits charged, micro-dollars", ["model", "kind"]);
  const videoSeconds = plainCounter(registry, "reelay_video_seconds_total", "Seconds of video billed", ["model"]);
  const videoTransitions = new Counter({ name: "reelay_video_job_transitions_total", help: "Video job state changes", labelNames: ["model", "from", "to"], registers });
  const rateLimitRejections = new Counter({ name: "reelay_rate_limit_rejections_total", help: "Requests refused with 429 by a rate limit", labelNames: ["limit", "scope"], registers });

  // Per upstream deployment: read from the plugins' routers at each scrape (they count in memory, per instance)
  let upstreams: () => UpstreamSource = () => [];
  const perDeployment = (set: (labels: { model: string; deployment: string }, d: DeploymentStatus) => void) => {
    for (const m of upstreams()) for (const d of m.deployments) set({ model: m.model, deployment: d.name }, d);
  };
  new Counter({
    name: "reelay_upstream_deployment_requests_total", help: "Attempts sent to an upstream deployment", labelNames: ["model", "deployment"], registers,
    collect() {
      this.reset();
      perDeployment((l, d) => this.inc(l, d.requests));
    },
  });
  new Counter({
    name: "reelay_upstream_deployment_errors_total", help: "Failed attempts on an upstream deployment, by kind (connect, timeout, http_<status>, stream_interrupted …)", labelNames: ["model", "deployment", "kind"], registers,
    collect() {
      this.reset();
      perDeployment((l, d) => {
        for (const [kind, n] of Object.entries(d.errors)) this.inc({ ...l, kind }, n);
      });
    },
  });
  new Gauge({
    name: "reelay_upstream_deployment_latency_seconds", help: "Moving average latency of successful attempts (a stream: to its first event)", labelNames: ["model", "deployment"], registers,
    collect() {
      this.reset();
      perDeployment((l, d) => d.latencyMs !== null && this.set(l, d.latencyMs / 1000));
    },
  });
  // a histogram the routers keep themselves (a bucket array each): exported as they report it
  registry.registerMetric(histogramFrom("reelay_upstream_deployment_attempt_seconds", "Latency of successful attempts on an upstream deployment (a stream: to its first event)", () => {
    const out: Array<{ labels: { model: string; deployment: string }; h: LatencyHistogram }> = [];
    perDeployment((labels, d) => d.latency && out.push({ labels, h: d.latency }));
    return out;
  }));
  new Gauge({
    name: "reelay_upstream_deployment_in_flight", help: "Attempts in flight on an upstream deployment", labelNames: ["model", "deployment"], registers,
    collect() {
      this.reset();
      perDeployment((l, d) => this.set(l, d.inFlight));
    },
  });
  new Gauge({
    name: "reelay_upstream_deployment_circuit_state", help: "Circuit breaker state of an upstream deployment: 1 for the current state (closed, open, half_open)", labelNames: ["model", "deployment", "state"], registers,
    collect() {
      this.reset();
      perDeployment((l, d) => {
        for (const state of ["closed", "open", "half_open"] as const) this.set({ ...l, state }, d.state === state ? 1 : 0);
      });
    },
  });

  new Gauge({
    name: "reelay_rate_limiter_degraded",
    help: "1 while the Redis limiter is unreachable and limits are per instance (in-process fallback)",
    labelNames: ["backend"],
    registers,
    collect() {
      const h = limiterHealth();
      this.reset();
      this.set({ backend: h.backend }, h.degraded ? 1 : 0);
    },
  });

  const queueDepth = new Gauge({ name: "reelay_video_queue_depth", help: "Video jobs waiting to start (status queued)", registers });
  const processing = new Gauge({ name: "reelay_video_jobs_processing", help: "Video jobs running upstream (status processing)", registers });
  const oldestQueued = new Gauge({ name: "reelay_video_queue_oldest_age_seconds", help: "Age of the oldest queued video job (0 when none)", registers });
  const schedulerLag = new Gauge({ name: "reelay_scheduler_lag_seconds", help: "How long the oldest due, unleased video job has waited past its due time (0 when none)", registers });
  const holdsOpen = new Gauge({ name: "reelay_open_holds", help: "Credit holds not yet settled or released", registers });
  const holdsOpenMicros = new Gauge({ name: "reelay_open_holds_micros", help: "Credits reserved by open holds, micro-dollars", registers });
  const dbGaugeErrors = new Counter({ name: "reelay_metrics_db_errors_total", help: "Scrapes whose database gauges could not be read", registers });

  const rss = new Gauge({ name: "process_resident_memory_bytes", help: "Resident memory size in bytes", registers });
  const heapUsed = new Gauge({ name: "nodejs_heap_size_used_bytes", help: "JavaScript heap in use, bytes", registers });
  const heapTotal = new Gauge({ name: "nodejs_heap_size_total_bytes", help: "JavaScript heap size, bytes", registers });
  const loopLag = new Gauge({ name: "nodejs_eventloop_lag_seconds", help: "Event-loop delay since the previous scrape (perf_hooks monitorEventLoopDelay)", labelNames: ["quantile"], registers });

  // 10 ms resolution: enough to see the 50 ms+ stalls that matter, negligible cost
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();

  return {
    registry,
    requests,
    upstreamDuration,
    upstreamErrors,
    tokens,
    credits,
    videoSeconds,
    videoTransitions,
    rateLimitRejections,

    /** where the per-deployment metrics come from (the model registry, once it exists) */
    watchUpstreams(read: () => UpstreamSource) {
      upstreams = read;
    },

    /** read the database and process gauges; one cheap query per family */
    async refresh(db: Db, onError: (err: unknown) => void) {
      const mem = process.memoryUsage();
      rss.set(mem.rss);
      heapUsed.set(mem.heapUsed);
      heapTotal.set(mem.heapTotal);
      const ns = (v: number) => (Number.isFinite(v) ? v / 1e9 : 0);
      loopLag.set({ quantile: "0.5" }, ns(loop.percentile(50)));
      loopLag.set({ quantile: "0.99" }, ns(loop.percentile(99)));
      loopLag.set({ quantile: "1" }, ns(loop.max));
      loop.reset();

      const [queue, holds] = await Promise.allSettled([videoQueue(db), openHolds(db)]);
      if (queue.status === "fulfilled") {
        queueDepth.set(queue.value.queued);
        processing.set(queue.value.processing);
        oldestQueued.set(queue.value.oldestQueuedAgeSeconds);
        schedulerLag.set(queue.value.schedulerLagSeconds);
      }
      if (holds.status === "fulfilled") {
        holdsOpen.set(holds.value.count);
        holdsOpenMicros.set(holds.value.micros);
      }
      for (const r of [queue, holds]) {
        if (r.status === "rejected") {
          dbGaugeErrors.inc();
          onError(r.reason);
        }
      }
    },

    close() {
      loop.disable();
    },
  };
}

/**
 * A histogram whose buckets are kept elsewhere (each router's bucket array), in prom-client's
 * metric shape, read at each scrape: prom-client's own Histogram can only count observations.
 */
function histogramFrom(name: string, help: string, read: () => Array<{ labels: Record<string, string>; h: LatencyHistogram }>): Metric {
  const metric = {
    name, help, type: "histogram", aggregator: "sum",
    reset() {},
    async get() {
      const values = read().flatMap(({ labels, h }) => histogramRows(name, labels, h.le, h.counts, h.count, h.sumSeconds));
      return { name, help, type: "histogram", aggregator: "sum", values };
    },
  };
  return metric as unknown as Metric;
}
