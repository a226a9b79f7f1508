/**
 * Operations wiring (issue 8): rate limits, metrics, request logs, admin usage views.
 * `createOps` is called once at boot; its parts are plugged into the deps and the app.
 *
 * Redis outage policy: with REDIS_URL set, limits are shared through Redis; when Redis is unreachable
 * the limiter answers from an in-process limiter (per instance: N instances then allow up to N × the
 * limit) and logs the outage once, at error level. Serving with weaker limits beats refusing every
 * request because a cache is down, so /readyz stays ready and reports the check as degraded, and
 * the reelay_rate_limiter_degraded gauge reads 1 until Redis answers again.
 */
import { Elysia } from "elysia";
import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import type { AppDeps } from "../deps.ts";
import type { ReadinessCheck } from "../modules/health/index.ts";
import { createMemoryLimiter, createRedisLimiter, type RateLimiter } from "../rate-limit/index.ts";
import type { Telemetry, TokenBudget } from "./hooks.ts";
import { createMetrics } from "./metrics.ts";
import { createRateLimits } from "./rate-limits.ts";
import { createRequestHooks } from "./request-hooks.ts";
import { metricsRoutes, usageRoutes } from "./routes.ts";
import { createTelemetry } from "./telemetry.ts";

export interface Ops {
  tokenBudget: TokenBudget;
  telemetry: Telemetry;
  /** global request hooks (request-rate limit, request log, request metrics), used first by createApp */
  requestHooks(deps: AppDeps): Elysia<any, any, any, any, any, any, any>;
  /** extra routes (/metrics, /admin/usage …) */
  routes(deps: AppDeps): Elysia<any, any, any, any, any, any, any>[];
  readinessChecks: ReadinessCheck[];
  close(): Promise<void>;
}

export function createLimiter(config: Pick<Config, "redisUrl">, logger: Logger): RateLimiter {
  if (!config.redisUrl) return createMemoryLimiter();
  const log = logger.child({ component: "rate-limit" });
  return createRedisLimiter(config.redisUrl, {
    fallback: createMemoryLimiter(),
    logger: { error: (msg, fields) => log.error(fields ?? {}, msg), info: (msg, fields) => log.info(fields ?? {}, msg) },
  });
}

export async function createOps(config: Config, logger: Logger, opts: { limiter?: RateLimiter } = {}): Promise<Ops> {
  const limiter = opts.limiter ?? createLimiter(config, logger);
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

  return {
    tokenBudget: limits.tokenBudget,
    telemetry: createTelemetry(metrics, logger),
    requestHooks: (deps) => createRequestHooks(deps, { limits, metrics, logger }),
    routes: (deps) => [metricsRoutes(deps, metrics), usageRoutes(deps)],
    readinessChecks: config.redisUrl ? [redisCheck] : [],
    async close() {
      metrics.close();
      await limiter.close();
    },
  };
}
