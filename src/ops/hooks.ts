/**
 * The seams between the HTTP surface and operations (rate limits, metrics, request logs, readiness).
 * `createOps` (ops/index.ts) provides the real implementations; boot puts them into AppDeps. The
 * defaults here do nothing, so an app built without the ops module (unit tests) still works.
 */
import type { Db } from "../db/index.ts";
import type { RequestLimit, TokenBudget } from "../rate-limit/key-and-account-limits.ts";
import type { CallTrace } from "../plugin-sdk/index.ts";

export interface Telemetry {
  /** one call to a plugin/upstream finished */
  upstream(e: { plugin: string; model: string; ms: number; outcome: "ok" | "error"; errorKind?: string }): void;
  /** credits charged (micro-dollars) and what for */
  charged(e: { model: string; kind: "chat" | "embeddings" | "video"; micros: number; promptTokens?: number; completionTokens?: number; seconds?: number }): void;
  /** a video job changed state */
  videoTransition(e: { jobId: string; model: string; from: string | null; to: string; accountId: string }): void;
}

/** Facts a route learns about a request (model, tokens, cost …) for its log line and the per-model metrics. */
export interface RequestFacts {
  model?: string;
  accountId?: string;
  keyPrefix?: string;
  /** the API key's id (never the key), for the request's trace; not in the log line, which has the prefix */
  keyId?: string;
  promptTokens?: number;
  completionTokens?: number;
  seconds?: number;
  cost?: number;
  jobId?: string;
  disconnected?: boolean;
  /** the upstream deployment that served the request, and the attempts it took (several deployments per model) */
  deployment?: string;
  attempts?: number;
  /** the model the client asked for, when a fallback model served it (`model` is the one that served) */
  requestedModel?: string;
  /** tools the client offered that reelay left out (ones only the provider's own servers run) */
  omittedTools?: string[];
}

/** What the app knows of a request once its response went out. */
export interface RequestEnd {
  requestId: string;
  method: string;
  /** the route template ("/v1/videos/generations/:id"), or "unmatched" */
  route: string;
  path: string;
  status: number;
}

/** One log line and the request metrics per request; createApp calls begin and end, routes call note. */
export interface RequestLog {
  begin(request: Request): void;
  note(request: Request, facts: RequestFacts): void;
  /** `models` tells known model ids from client-typed names (a metric label per unknown name would grow without bound) */
  end(request: Request, e: RequestEnd, models: { get(id: string): unknown }): void;
  /** write what is pending (lines may wait a few ms to be written together); called at shutdown */
  flush(): void;
  /**
   * Resolves once every request begun has ended (its line written, its span ended), or after
   * `ms`: false then. At shutdown, after the server stopped: a response can reach its client a
   * little before the hook that ends it runs, and a line or span ended after the exporters close is lost.
   */
  idle(ms: number): Promise<boolean>;
}

/** A span attribute value (undefined: left out). */
export type TraceValue = string | number | boolean | string[] | undefined;

/** One span of a trace (a step of a request or of a job); `end` once. */
export interface TraceSpan {
  set(attributes: Record<string, TraceValue>): void;
  /** err: the step failed (recorded as the span's error status) */
  end(err?: unknown): void;
  /** a span under this one, from now until its end */
  child(name: string, attributes?: Record<string, TraceValue>): TraceSpan;
  /** calls this step makes to a remote service (CallOptions.trace): their `traceparent` names this span, or its open attempt */
  readonly upstream: CallTrace;
}

/** The trace of one request in flight: its server span, and the steps under it. */
export interface RequestTrace {
  /** attributes of the request's own span */
  set(attributes: Record<string, TraceValue>): void;
  /** the span's name (a GenAI request: "{operation} {model}") */
  rename(name: string): void;
  /** a span under the request's span, from now until its end */
  child(name: string, attributes?: Record<string, TraceValue>): TraceSpan;
  /** what a plugin call gets (CallOptions.trace): its upstream requests carry this trace */
  readonly upstream: CallTrace;
  /** the W3C traceparent of the request's span (a job keeps it to link its steps to the request) */
  traceparent(): string;
  /** whether prompts and answers may be recorded (REELAY_TRACE_CONTENT) */
  readonly content: boolean;
  /** keep the span open after the response went out (a stream settles later); call the result once done */
  hold(): () => void;
}

/** A request trace of background work (Tracing.work): its span ends at `end` (err: the work failed). */
export interface WorkTrace extends RequestTrace {
  /** what a request's log line would note (account, key, tokens, charge), as the span's attributes */
  note(facts: RequestFacts): void;
  end(err?: unknown): void;
}

/**
 * OpenTelemetry traces (src/ops/tracing/). Off (noTracing) when no OTLP endpoint is configured:
 * then `of` answers undefined and no span object is ever made.
 */
export interface Tracing {
  /** the request's trace; undefined: tracing is off or the request is not sampled */
  of(request: Request): RequestTrace | undefined;
  /**
   * A span of background work (a job's scheduler step, a webhook delivery), linked to the request
   * whose `traceparent` it names (null: no link); undefined when tracing is off or not sampled.
   */
  background(name: string, linkTo: string | null, attributes?: Record<string, TraceValue>): TraceSpan | undefined;
  /**
   * Background work that runs the request pipeline (a batch line): a request trace (the charge,
   * attempts and settlement spans go under it) in the trace `linkTo` names; it ends at `end`, or
   * later if a hold is still open. Undefined when tracing is off or not sampled.
   */
  work(name: string, linkTo: string | null, attributes?: Record<string, TraceValue>): WorkTrace | undefined;
  /** export what is pending and stop (shutdown) */
  close(): Promise<void>;
}

/** GET /metrics: the Prometheus text, after reading the gauges that live in the database. */
export interface MetricsExport {
  scrape(db: Db): Promise<{ contentType: string; text: string }>;
}

/** An extra /readyz check (the database check is built in). */
export type ReadinessCheck = () => Promise<{ name: string; ok: boolean; detail?: string; degraded?: boolean }>;

export const noRequestLimit: RequestLimit = { admit: async () => ({}) };
export const noTokenBudget: TokenBudget = { consume: async () => ({}) };
export const noTelemetry: Telemetry = { upstream() {}, charged() {}, videoTransition() {} };
export const noRequestLog: RequestLog = { begin() {}, note() {}, end() {}, flush() {}, idle: async () => true };
export const noTracing: Tracing = { of: () => undefined, background: () => undefined, work: () => undefined, close: async () => {} };

/** The parts of AppDeps that the ops module provides. */
export interface OpsParts {
  requestLimit: RequestLimit;
  tokenBudget: TokenBudget;
  telemetry: Telemetry;
  requestLog: RequestLog;
  tracing: Tracing;
  /** null: no /metrics route */
  metrics: MetricsExport | null;
  readinessChecks: ReadinessCheck[];
}

export const noOps: OpsParts = { requestLimit: noRequestLimit, tokenBudget: noTokenBudget, telemetry: noTelemetry, requestLog: noRequestLog, tracing: noTracing, metrics: null, readinessChecks: [] };
