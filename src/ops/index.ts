/**
 * Operations: metrics, request logs, readiness of Redis, and the wiring of the rate limits
 * (rate-limit/). `createOps` is called once at boot, before the deps; its parts (OpsParts, see
 * hooks.ts) become part of AppDeps, so createApp and the routes only ever see deps (nothing here
 * imports the app).
 *
 * Redis outage policy: with REDIS_URL set, limits are shared through Redis; when Redis is unreachable
 * the limiter answers from an in-process limiter (per instance: N instances then allow up to N × the
 * limit) and logs the outage once, at error level. Serving with weaker limits beats refusing every
 * request because a cache is down, so /readyz stays ready and reports the check as degraded, and
 * the reelay_rate_limiter_degraded gauge reads 1 until Redis answers again.
 */
import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import { createMemoryLimiter, type RateLimiter } from "../rate-limit/index.ts";
import { noTracing, type OpsParts, type ReadinessCheck } from "./hooks.ts";
import { createMetrics, type UpstreamSource } from "./metrics.ts";
import { createRateLimits } from "../rate-limit/key-and-account-limits.ts";
import { createRequestLog } from "./request-log.ts";
import { createTelemetry } from "./telemetry.ts";
import { version } from "../../package.json" with { type: "json" };

export interface Ops extends OpsParts {
  /** the per-deployment metrics read this (the model registry's upstreams) */
  watchUpstreams(read: () => UpstreamSource): void;
  close(): Promise<void>;
}

export async function createLimiter(config: Pick<Config, "redisUrl">, logger: Logger): Promise<RateLimiter> {
  if (!config.redisUrl) return createMemoryLimiter();
  const log = logger.child({ component: "rate-limit" });
  const { createRedisLimiter } = await import("../rate-limit/redis-limiter.ts"); // ioredis only with REDIS_URL
  return createRedisLimiter(config.redisUrl, {
    fallback: createMemoryLimiter(),
    logger: { error: (msg, fields) => log.error(fields ?? {}, msg), info: (msg, fields) => log.info(fields ?? {}, msg) },
  });
}

export async function createOps(config: Config, logger: Logger, opts: { limiter?: RateLimiter } = {}): Promise<Ops> {
  const limiter = opts.limiter ?? (await createLimiter(config, logger));
  const metrics = createMetrics(() => limiter.health());
  const limits = createRateLimits({
    limiter,
    defaults: config.rateLimits,
    onReject: (kind, scope) => metrics.rateLimitRejections.inc({ limit: kind, scope }),
  });

  const redisCheck: ReadinessCheck = async () => {
    const h = limiter.health();
    if (!h.degraded) return { name: "redis", ok: true, detail: "connected: limits shared across instances" };
    return { name: "redis", ok: true, degraded: true, detail: "unreachable: using in-process limits" };
  };

  const requestLog = createRequestLog({ metrics, logger });
  // the OpenTelemetry SDK is loaded only when traces are configured: off, no span is ever made
  const tracing = config.tracing ? (await import("./tracing/otel-tracing.ts")).createOtelTracing(config.tracing, logger, version) : null;
  return {
    requestLimit: limits.requestLimit,
    tokenBudget: limits.tokenBudget,
    telemetry: createTelemetry(metrics, logger),
    requestLog: tracing ? tracing.wrap(requestLog) : requestLog,
    tracing: tracing ?? noTracing,
    metrics: {
      async scrape(db) {
        await metrics.refresh(db, (err) => logger.warn({ err }, "metrics: could not read database gauges"));
        return { contentType: metrics.registry.contentType, text: await metrics.registry.metrics() };
      },
    },
    readinessChecks: config.redisUrl ? [redisCheck] : [],
    watchUpstreams: metrics.watchUpstreams,
    async close() {
      requestLog.flush();
      await tracing?.close();
      metrics.close();
      await limiter.close();
    },
  };
}
