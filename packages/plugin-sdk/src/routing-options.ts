/**
 * The `routing` option of a model served by several deployments: retries over deployments
 * (routed-call.ts) and each deployment's circuit breaker (router.ts). A plugin that routes declares
 * it as is, so every such plugin takes the same option with the same defaults:
 *
 *   options: Type.Object({ deployments: …, routing: RoutingOptions }, …)
 *
 * Defaults: 3 attempts within 30 s; the circuit opens after 5 failures in a row or an error rate
 * of 50 % over ≥ 20 calls in 10 s, for 5 s (an upstream Retry-After on 429 / 503: that long).
 */
import { Type, type Static } from "@sinclair/typebox";
import { DEFAULT_RETRY } from "./routed-call.ts";
import { DEFAULT_BREAKER } from "./router.ts";

export const RoutingOptions = Type.Object({
  maxAttempts: Type.Integer({ minimum: 1, maximum: 10, default: DEFAULT_RETRY.maxAttempts }),
  deadlineMs: Type.Integer({ minimum: 1, maximum: 3_600_000, default: DEFAULT_RETRY.deadlineMs }),
  breaker: Type.Object({
    consecutiveFailures: Type.Integer({ minimum: 1, maximum: 1000, default: DEFAULT_BREAKER.consecutiveFailures }),
    errorRate: Type.Number({ exclusiveMinimum: 0, maximum: 1, default: DEFAULT_BREAKER.errorRate }),
    minRequests: Type.Integer({ minimum: 1, maximum: 1_000_000, default: DEFAULT_BREAKER.minRequests }),
    windowMs: Type.Integer({ minimum: 100, maximum: 3_600_000, default: DEFAULT_BREAKER.windowMs }),
    cooldownMs: Type.Integer({ minimum: 1, maximum: 3_600_000, default: DEFAULT_BREAKER.cooldownMs }),
  }, { additionalProperties: false, default: {} }),
}, { additionalProperties: false, default: {} });

export type RoutingOptions = Static<typeof RoutingOptions>;
