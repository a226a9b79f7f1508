/**
 * The one structured line logged per request, and the request metrics. Built from what the app saw
 * (route, status, latency) and what the route recorded with `note`. Only the key's visible prefix is
 * ever logged, never the key, the Authorization header, the query string or the body.
 */
import pino from "pino";
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
  const lines = lineWriter(logger);
  // keyed by the Request object: gone with it, whichever way the request ends
  const records = new WeakMap<Request, InFlight>();
  // begun and not yet ended (a count, not a set: a request is never kept alive by the log)
  let open = 0;
  let idleWaiters: Array<() => void> = [];

  return {
    begin(request) {
      open++;
      records.set(request, { startedAt: performance.now() });
    },
    note(request, facts) {
      const r = records.get(request);
      if (r) Object.assign(r, facts);
      else records.set(request, { ...facts });
    },
    end(request, e, models) {
      if (open > 0 && --open === 0 && idleWaiters.length) {
        const waiters = idleWaiters;
        idleWaiters = [];
        // after the caller's own work on this end (the tracing wrapper ends the span next)
        queueMicrotask(() => { for (const w of waiters) w(); });
      }
      const r = records.get(request) ?? {};
      const latencyMs = r.startedAt === undefined ? null : performance.now() - r.startedAt;
      // a label per unknown model name would let clients grow the metric without bound
      const model = r.model ? (models.get(r.model) ? r.model : "unknown") : "";
      metrics.requests.record(e.route, e.method, model, e.status, latencyMs === null ? null : latencyMs / 1000);
      const level = requestLogLevel(e.route, e.status);
      if (logger.isLevelEnabled(level)) lines.write(level, requestLogLine({ ...e, latencyMs, facts: r }));
    },
    flush: lines.flush,
    idle(ms) {
      if (open === 0) return Promise.resolve(true);
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          idleWaiters = idleWaiters.filter((w) => w !== done);
          resolve(false);
        }, Math.max(0, ms));
        const done = () => {
          clearTimeout(timer);
          resolve(true);
        };
        idleWaiters.push(done);
      });
    },
  };
}

/**
 * Writes request lines to the logger's own destination exactly as pino would (its level prefix,
 * time function, child bindings, then the fields and "msg":"request"), but from one JSON.stringify:
 * pino's generic path stringifies field by field and walks the redaction paths, ~5 µs a line on
 * the chat bench against ~1 µs. Safe without redaction: the line is a fixed set of plain values,
 * and the only credential-like one is the key's visible prefix.
 *
 * Lines go out in batches, every FLUSH_MS or at BATCH_CHARS, whichever comes first: one write
 * per line cost ~15 µs of CPU per request (an fs.write and its callback each time; A/B on the chat
 * bench: 123 → 108 µs per request), and batching per event-loop turn still wrote about once per
 * stream (~6 µs each). A request line waits at most FLUSH_MS; other log lines are not delayed.
 * Only pino's own file destination (stdout) gets batches: another stream may expect one line per
 * write (tests parse each write as one JSON object), so it gets them one by one.
 */
const FLUSH_MS = 10;
const BATCH_CHARS = 16 * 1024;

interface LineWriter {
  write(level: "debug" | "info" | "warn", line: RequestLogLine): void;
  /** write what is pending now (at shutdown) */
  flush(): void;
}

function lineWriter(logger: Logger): LineWriter {
  const internals = logger as unknown as Record<symbol, unknown>;
  const stream = internals[pino.symbols.streamSym] as { write(s: string): unknown; fd?: unknown; flushSync?: unknown };
  const batches = typeof stream.fd === "number" && typeof stream.flushSync === "function"; // pino.destination() (sonic-boom)
  const time = internals[pino.symbols.timeSym] as () => string;
  const chindings = internals[pino.symbols.chindingsSym] as string;
  const prefix = (level: string) => `{"level":${logger.levels.values[level]}`;
  const prefixes = { debug: prefix("debug"), info: prefix("info"), warn: prefix("warn") };
  let pending = "";
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (!pending) return;
    const lines = pending;
    pending = "";
    stream.write(lines);
  };
  return {
    write(level, line) {
      pending += `${prefixes[level]}${time()}${chindings},${JSON.stringify(line).slice(1, -1)},"msg":"request"}\n`;
      if (!batches || pending.length >= BATCH_CHARS) flush();
      else timer ??= setTimeout(flush, FLUSH_MS);
    },
    flush,
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
    deployment: f.deployment,
    attempts: f.attempts,
    requestedModel: f.requestedModel,
    omittedTools: f.omittedTools,
  };
}

export function requestLogLevel(route: string, status: number): "debug" | "info" | "warn" {
  if (QUIET_ROUTES.has(route)) return "debug";
  return status >= 500 ? "warn" : "info";
}
