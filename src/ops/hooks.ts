/**
 * The seams between feature routes and operations (rate limits, metrics, request logs).
 * Feature routes call these; the ops module provides the real implementations at boot.
 * The defaults do nothing, so a route works (and is testable) without the ops module.
 */
import type { Principal } from "../auth/authenticate-key.ts";

export interface TokenBudget {
  /**
   * Count `tokens` against the key's (and account's) tokens-per-minute limit. Throws an ApiError 429
   * (with Retry-After and x-ratelimit-*-tokens headers) when over; otherwise returns the
   * x-ratelimit-*-tokens headers to add to the response.
   */
  consume(principal: Principal, tokens: number): Promise<Record<string, string>>;
}

export interface Telemetry {
  /** one call to a plugin/upstream finished */
  upstream(e: { plugin: string; model: string; ms: number; outcome: "ok" | "error"; errorKind?: string }): void;
  /** credits charged (micro-dollars) and what for */
  charged(e: { model: string; kind: "chat" | "embeddings" | "video"; micros: number; promptTokens?: number; completionTokens?: number; seconds?: number }): void;
  /** a video job changed state */
  videoTransition(e: { jobId: string; model: string; from: string | null; to: string; accountId: string }): void;
}

export const noTokenBudget: TokenBudget = { consume: async () => ({}) };
export const noTelemetry: Telemetry = { upstream() {}, charged() {}, videoTransition() {} };

/**
 * Facts a route learns about a request (model, tokens, cost …) for the one log line per request
 * and the per-model request metrics. Keyed by the Request object; gone with it.
 */
export interface RequestFacts {
  model?: string;
  accountId?: string;
  keyPrefix?: string;
  promptTokens?: number;
  completionTokens?: number;
  seconds?: number;
  cost?: number;
  jobId?: string;
  disconnected?: boolean;
}

const facts = new WeakMap<Request, RequestFacts>();

export function annotate(request: Request, more: RequestFacts) {
  facts.set(request, { ...facts.get(request), ...more });
}

export function factsOf(request: Request): RequestFacts {
  return facts.get(request) ?? {};
}
