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
import { DEFAULT_UPSTREAM_TIMEOUTS } from "./upstream.ts";
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

/**
 * Each deployment's name: its own, else its base URL's host:port (a second with the same host gets
 * "#2" …), as /metrics, logs and GET /admin/upstreams show it.
 */
export function deploymentNames(list: ReadonlyArray<{ name?: string; baseUrl: string }>): string[] {
  const used = new Map<string, number>();
  return list.map((d) => {
    if (d.name) return d.name;
    const host = new URL(d.baseUrl).host;
    const n = (used.get(host) ?? 0) + 1;
    used.set(host, n);
    return n === 1 ? host : `${host}#${n}`;
  });
}

/**
 * What a schema cannot say about a model's upstreams, for `validateOptions`: one base URL or a
 * list of deployments (not both), every URL parses, deployment names are unique. Each problem
 * names its option.
 */
export function deploymentProblems(o: { baseUrl?: string; apiKeyEnv?: string; deployments?: ReadonlyArray<{ name?: string; baseUrl: string }> }, baseUrlRequired = true): string[] {
  if (o.deployments === undefined && o.baseUrl === undefined) return baseUrlRequired ? ['option "baseUrl": is required (or "deployments", a list of upstreams)'] : [];
  const problems: string[] = [];
  if (o.deployments !== undefined && (o.baseUrl !== undefined || o.apiKeyEnv !== undefined)) {
    problems.push('option "deployments": give either "baseUrl" (with "apiKeyEnv") or "deployments", not both');
  }
  const urls = o.deployments ? o.deployments.map((d, i) => [`deployments.${i}.baseUrl`, d.baseUrl] as const) : [["baseUrl", o.baseUrl!] as const];
  for (const [option, url] of urls) {
    try {
      new URL(url);
    } catch {
      problems.push(`option "${option}": not a valid URL: ${url}`);
    }
  }
  if (o.deployments && problems.length === 0) {
    const seen = new Set<string>();
    for (const [i, n] of deploymentNames(o.deployments).entries()) {
      if (seen.has(n)) problems.push(`option "deployments.${i}.name": "${n}" names two deployments (give each a unique name)`);
      seen.add(n);
    }
  }
  return problems;
}

const ms = (description: string, fallback: number) => Type.Integer({ minimum: 1, maximum: 86_400_000, default: fallback, description });

/** callUpstream's four deadlines as a model option, `timeouts: UpstreamTimeoutOptions` (defaults: DEFAULT_UPSTREAM_TIMEOUTS). */
export const UpstreamTimeoutOptions = Type.Object({
  /**
   * Streamed calls: request start → response headers. Covers DNS, TCP, TLS and the upstream
   * accepting the request (vLLM, OpenAI and llama.cpp send stream headers before generating).
   * Servers that hold the headers until the first token (Ollama under load) need a larger value.
   */
  connectMs: ms("streamed calls: request start to response headers", DEFAULT_UPSTREAM_TIMEOUTS.connectMs),
  /** Streamed calls: response headers → first body byte (queueing + prefill, i.e. time to first token). */
  firstByteMs: ms("streamed calls: headers to the first body byte", DEFAULT_UPSTREAM_TIMEOUTS.firstByteMs),
  /** Gap between two body chunks, both calls. */
  idleMs: ms("gap between two body chunks", DEFAULT_UPSTREAM_TIMEOUTS.idleMs),
  /** The whole call, body included (a non-streamed upstream sends headers only when done). */
  totalMs: ms("the whole call", DEFAULT_UPSTREAM_TIMEOUTS.totalMs),
}, { additionalProperties: false, default: {} });

