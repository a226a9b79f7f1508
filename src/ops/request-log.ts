/**
 * The one structured line logged per request. Built from what the ops hooks saw and what the route
 * recorded with `annotate` (hooks.ts). Only the key's visible prefix is ever logged, never the key,
 * the Authorization header, the query string or the body.
 */
import type { RequestFacts } from "./hooks.ts";

export interface RequestLogLine extends RequestFacts {
  requestId: string;
  method: string;
  route: string;
  path: string;
  status: number;
  latencyMs: number | null;
}

/** probes and scrapes arrive every few seconds; at info level they would drown the traffic */
const QUIET_ROUTES = new Set(["/healthz", "/readyz", "/metrics"]);

export function requestLogLine(e: { requestId: string; method: string; route: string; path: string; status: number; latencyMs: number | null; facts: RequestFacts }): RequestLogLine {
  const f = e.facts;
  return {
    requestId: e.requestId,
    method: e.method,
    route: e.route,
    path: e.path,
    status: e.status,
    latencyMs: e.latencyMs === null ? null : Math.round(e.latencyMs * 10) / 10,
    keyPrefix: f.keyPrefix,
    accountId: f.accountId,
    model: f.model,
    promptTokens: f.promptTokens,
    completionTokens: f.completionTokens,
    seconds: f.seconds,
    cost: f.cost,
    jobId: f.jobId,
    disconnected: f.disconnected,
  };
}

export function requestLogLevel(route: string, status: number): "debug" | "info" | "warn" {
  if (QUIET_ROUTES.has(route)) return "debug";
  return status >= 500 ? "warn" : "info";
}
