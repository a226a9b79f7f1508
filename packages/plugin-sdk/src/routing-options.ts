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

/**
 * The fields every deployment entry shares, whatever the plugin (each adds its base URL rule and
 * its own fields). The name goes into /metrics labels, log lines and a video job's handle
 * (`<deployment>/<job id>`), hence no slash or space.
 */
export const DeploymentName = Type.String({ pattern: "^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$", description: "letters, digits, . _ : -" });
/** the name of an environment variable (a key's, never the key itself) */
export const EnvVarName = Type.String({ pattern: "^[A-Za-z_][A-Za-z0-9_]*$", description: "an environment variable name" });
/** relative share of the traffic */
export const DeploymentWeight = Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000, default: 1 });
/** at most this many calls in flight on it from one reelay instance; at it, the deployment is skipped */
export const DeploymentMaxConcurrent = Type.Integer({ minimum: 1, maximum: 1_000_000 });
