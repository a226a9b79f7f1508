/**
 * The one structured line logged per request, and the request metrics. Built from what the app saw
 * (route, status, latency) and what the route recorded with `note`. Only the key's visible prefix is
 * ever logged, never the key, the Authorization header, the query string or the body.
 */
import type { Logger } from "../logger.ts";
import type { RequestEnd, RequestFacts, RequestLog } from "./hooks.ts";
import type { OpsMetrics } from "./metrics.ts";

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

/** What the log keeps per request in flight: when it began, and the facts routes noted. */
interface InFlight extends RequestFacts {
  startedAt?: number;
}

export function createRequestLog(opts: { metrics: OpsMetrics; logger: Logger }): RequestLog {
  const { metrics, logger } = opts;
  // keyed by the Request object: gone with it, whichever way the request ends
  const records = new WeakMap<Request, InFlight>();

  return {
    begin(request) {
      records.set(request, { startedAt: performance.now() });
    },
    note(request, facts) {
      const r = records.get(request);
      if (r) Object.assign(r, facts);
      else records.set(request, { ...facts });
    },
    end(request, e, models) {
      const r = records.get(request) ?? {};
      const latencyMs = r.startedAt === undefined ? null : performance.now() - r.startedAt;
      // a label per unknown model name would let clients grow the metric without bound
      const model = r.model ? (models.get(r.model) ? r.model : "unknown") : "";
      metrics.requests.inc({ route: e.route, method: e.method, model, status: String(e.status) });
      if (latencyMs !== null) metrics.requestDuration.observe({ route: e.route, method: e.method }, latencyMs / 1000);
      const level = requestLogLevel(e.route, e.status);
      if (logger.isLevelEnabled(level)) logger[level](requestLogLine({ ...e, latencyMs, facts: r }), "request");
    },
  };
}

export function requestLogLine(e: RequestEnd & { latencyMs: number | null; facts: RequestFacts }): RequestLogLine {
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
