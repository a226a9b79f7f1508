/**
 * Traces with the OpenTelemetry SDK: a server span per request (the GenAI semantic conventions
 * on the routes that call a model), child spans for its steps, W3C trace context in from the
 * client and out to the upstream, background spans for jobs and webhook deliveries. Loaded by
 * createOps only when an OTLP endpoint is configured (boot never imports it otherwise).
 *
 * No global context manager: the parent of every span is passed explicitly (the request's span
 * travels in its PipelineCall), which costs nothing per await (AsyncLocalStorage would) and keeps
 * spans right across reelay's own schedulers.
 *
 * What a traced chat request costs (bench/lib/tracing-cost.ts, four spans): the SDK's own span
 * creation and its protobuf serialisation are most of it (~3 µs and ~3 µs a span on the 2-core
 * machine). Around them reelay adds as little as it can: attributes go to the span one by one (no
 * object built per note, no `clean` copy, none at startSpan, where the SDK sanitises them twice),
 * each span's parent context is made once, and a request that is not sampled gets a trace that
 * only passes the W3C headers on (no span objects, no attributes).
 */
import {
  ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, defaultTextMapSetter,
  type Attributes, type Context, type Span, type TextMapGetter, type Tracer,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { resourceFromAttributes } from "@opentelemetry/resources";
import {
  AlwaysOffSampler, AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler, type SpanExporter,
} from "@opentelemetry/sdk-trace-base";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import {
  ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE, ATTR_SERVER_ADDRESS, ATTR_SERVER_PORT, ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION, ATTR_URL_PATH,
} from "@opentelemetry/semantic-conventions";
import type { TracingConfig } from "../../config.ts";
import type { Logger } from "../../logger.ts";
import type { AttemptTrace, CallTrace } from "../../plugin-sdk/index.ts";
import type { RequestEnd, RequestFacts, RequestLog, RequestTrace, TraceSpan, TraceValue, Tracing, WorkTrace } from "../hooks.ts";
import { GEN_AI, REELAY } from "./attributes.ts";

const propagator = new W3CTraceContextPropagator();
const headerGetter: TextMapGetter<Headers> = {
  get: (h, key) => h.get(key) ?? undefined,
  keys: (h) => [...h.keys()],
};
const recordGetter: TextMapGetter<Record<string, string>> = {
  get: (r, key) => r[key],
  keys: (r) => Object.keys(r),
};

export interface OtelTracing extends Tracing {
  /** the request log with the request spans begun, noted and ended beside its lines */
  wrap(log: RequestLog): RequestLog;
}

export function createOtelTracing(config: TracingConfig, logger: Logger, version: string): OtelTracing {
  const exporterOptions = { url: config.url, headers: config.headers, timeoutMillis: 10_000 };
  const exporter: SpanExporter = config.protocol === "http/json" ? new JsonExporter(exporterOptions) : new ProtoExporter(exporterOptions);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName, [ATTR_SERVICE_VERSION]: version }),
    sampler: samplerOf(config),
    // batches of 2,048 spans (~400 requests): one export per batch costs a serialisation pass and a
    // POST; at 512 the POSTs were a visible part of the CPU per request at 100 % sampling
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: config.scheduleDelayMs, maxQueueSize: 32_768, maxExportBatchSize: 2_048 })],
  });
  const tracer = provider.getTracer("reelay", version);
  const traces = new WeakMap<Request, OtelRequestTrace | PropagatedTrace>();
  const addressOf = addressBook();
  let exportFailures = 0;
  const log = logger.child({ component: "tracing" });

  /** a span of background work: a child of the request `linkTo` names, with a link to it (what tools show as "follows from") */
  const backgroundSpan = (name: string, linkTo: string | null, attributes: Record<string, TraceValue> | undefined) => {
    const parent = linkTo ? propagator.extract(ROOT_CONTEXT, { traceparent: linkTo }, recordGetter) : ROOT_CONTEXT;
    const linked = trace.getSpanContext(parent);
    const span = tracer.startSpan(name, { kind: SpanKind.INTERNAL, links: linked ? [{ context: linked, attributes: { "reelay.link": "submitted_by" } }] : undefined }, parent);
    setAll(span, attributes);
    return span;
  };
  const tracing: OtelTracing = {
    of: (request) => traces.get(request),
    background(name, linkTo, attributes) {
      const span = backgroundSpan(name, linkTo, attributes);
      return span.isRecording() ? new OtelSpan(tracer, span, addressOf) : undefined;
    },
    work(name, linkTo, attributes): WorkTrace | undefined {
      const span = backgroundSpan(name, linkTo, attributes);
      return span.isRecording() ? new OtelRequestTrace(tracer, span, config.content, addressOf) : undefined;
    },
    async close() {
      await provider.shutdown().catch((err) => log.warn({ err }, "tracing: could not export the last spans"));
    },
    wrap(inner) {
      return {
        begin(request) {
          inner.begin(request);
          const parent = request.headers.has("traceparent") ? propagator.extract(ROOT_CONTEXT, request.headers, headerGetter) : ROOT_CONTEXT;
          const span = tracer.startSpan(request.method, SERVER_SPAN, parent);
          if (!span.isRecording()) return void traces.set(request, new PropagatedTrace(span));
          span.setAttribute(ATTR_HTTP_REQUEST_METHOD, request.method);
          traces.set(request, new OtelRequestTrace(tracer, span, config.content, addressOf));
        },
        note(request, facts) {
          inner.note(request, facts);
          traces.get(request)?.note(facts);
        },
        end(request, e, models) {
          inner.end(request, e, models);
          traces.get(request)?.responded(e);
        },
        flush: inner.flush,
        idle: inner.idle,
      };
    },
  };
  // an unreachable collector must not flood the log: the first failure, then every 100th
  const exportOriginal = exporter.export.bind(exporter);
  exporter.export = (spans, done) =>
    exportOriginal(spans, (result) => {
      if (result.code !== 0 && exportFailures++ % 100 === 0) log.warn({ err: result.error, failures: exportFailures, url: config.url }, "tracing: spans could not be exported");
      done(result);
    });
  return tracing;
}

function samplerOf(c: TracingConfig): Sampler {
  const ratio = new TraceIdRatioBasedSampler(c.ratio);
  switch (c.sampler) {
    case "always_on": return new AlwaysOnSampler();
    case "always_off": return new AlwaysOffSampler();
    case "traceidratio": return ratio;
    case "parentbased_always_off": return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio": return new ParentBasedSampler({ root: ratio });
    default: return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

const SERVER_SPAN = { kind: SpanKind.SERVER };
const INTERNAL_SPAN = { kind: SpanKind.INTERNAL };
const CLIENT_SPAN = { kind: SpanKind.CLIENT };

/** the attributes that are set (undefined: left out), straight onto the span */
function setAll(span: Span, attributes: Record<string, TraceValue> | undefined) {
  if (attributes) for (const k in attributes) {
    const v = attributes[k];
    if (v !== undefined) span.setAttribute(k, v);
  }
}

/** `span` as a parent, and its W3C headers: made once per span, on first use */
class SpanContexts {
  private ctx: Context | null = null;
  constructor(readonly span: Span) {}
  get context(): Context {
    return (this.ctx ??= trace.setSpan(ROOT_CONTEXT, this.span));
  }
  headers(): Record<string, string> {
    const carrier: Record<string, string> = {};
    propagator.inject(this.context, carrier, defaultTextMapSetter);
    return carrier;
  }
}

/**
 * The upstream side of a span: `outgoing` gives the W3C headers of the attempt open now (else of
 * the span itself) and records the address called on it; `attempt` opens a client span under it.
 * A request's span and a background span (a job's step, a webhook delivery) use the same one.
 */
class UpstreamCalls implements CallTrace {
  /** the attempt span open now: an upstream request made now belongs to it */
  private attemptSpan: SpanContexts | null = null;
  constructor(private readonly tracer: Tracer, private readonly parent: SpanContexts, private readonly addressOf: (url: string) => Attributes) {}

  attempt(info: { deployment?: string; attempt: number }): AttemptTrace {
    const span = this.tracer.startSpan(`upstream attempt ${info.attempt}`, CLIENT_SPAN, this.parent.context);
    if (info.deployment !== undefined) span.setAttribute(REELAY.deployment, info.deployment);
    span.setAttribute(REELAY.attempt, info.attempt);
    const open = (this.attemptSpan = new SpanContexts(span));
    let ended = false;
    return {
      end: (err) => {
        if (ended) return;
        ended = true;
        if (this.attemptSpan === open) this.attemptSpan = null;
        if (err !== undefined) failed(span, err);
        span.end();
      },
    };
  }

  outgoing(url: string): Record<string, string> {
    const calling = this.attemptSpan ?? this.parent;
    const address = this.addressOf(url);
    calling.span.setAttributes(address);
    if (calling !== this.parent) this.parent.span.setAttributes(address);
    return calling.headers();
  }
}

class OtelSpan implements TraceSpan {
  private ended = false;
  private calls: UpstreamCalls | null = null;
  private contexts: SpanContexts | null = null;
  constructor(private readonly tracer: Tracer, readonly span: Span, private readonly addressOf: (url: string) => Attributes) {}
  private get self(): SpanContexts {
    return (this.contexts ??= new SpanContexts(this.span));
  }
  get upstream(): CallTrace {
    return (this.calls ??= new UpstreamCalls(this.tracer, this.self, this.addressOf));
  }
  child(name: string, attributes?: Record<string, TraceValue>): TraceSpan {
    const span = this.tracer.startSpan(name, INTERNAL_SPAN, this.self.context);
    setAll(span, attributes);
    return new OtelSpan(this.tracer, span, this.addressOf);
  }
  set(attributes: Record<string, TraceValue>): void {
    setAll(this.span, attributes);
  }
  end(err?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    if (err !== undefined) failed(this.span, err);
    this.span.end();
  }
}

function failed(span: Span, err: unknown) {
  const e = err as { message?: unknown; kind?: unknown; name?: unknown };
  const message = typeof e?.message === "string" ? e.message : String(err);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
  span.setAttribute("error.type", typeof e?.kind === "string" ? e.kind : typeof e?.name === "string" ? e.name : "error");
}

/** What the request log notes, as span attributes (tokens and cost are what was billed). */
const FACT_ATTRIBUTES: Partial<Record<keyof RequestFacts, string>> = {
  accountId: REELAY.accountId,
  keyId: REELAY.keyId,
  promptTokens: GEN_AI.inputTokens,
  completionTokens: GEN_AI.outputTokens,
  cost: REELAY.chargeMicros,
  jobId: REELAY.jobId,
  deployment: REELAY.deployment,
  attempts: REELAY.attempts,
  requestedModel: REELAY.requestedModel,
  disconnected: REELAY.disconnected,
};

class OtelRequestTrace implements WorkTrace {
  readonly upstream: CallTrace;
  private readonly self: SpanContexts;
  private holds = 0;
  private response: RequestEnd | null = null;
  private ended = false;
  private named = false;
  /** background work (Tracing.work) said it is done */
  private finished = false;

  constructor(private readonly tracer: Tracer, readonly span: Span, readonly content: boolean, private readonly addressOf: (url: string) => Attributes) {
    this.self = new SpanContexts(span);
    this.upstream = new UpstreamCalls(tracer, this.self, addressOf);
  }

  set(attributes: Record<string, TraceValue>): void {
    setAll(this.span, attributes);
  }

  rename(name: string): void {
    this.named = true;
    this.span.updateName(name);
  }

  child(name: string, attributes?: Record<string, TraceValue>): TraceSpan {
    const span = this.tracer.startSpan(name, INTERNAL_SPAN, this.self.context);
    setAll(span, attributes);
    return new OtelSpan(this.tracer, span, this.addressOf);
  }

  traceparent(): string {
    return this.self.headers().traceparent ?? "";
  }

  hold(): () => void {
    this.holds++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.holds--;
      this.maybeEnd();
    };
  }

  note(facts: RequestFacts): void {
    for (const k in facts) {
      const name = FACT_ATTRIBUTES[k as keyof RequestFacts];
      const v = facts[k as keyof RequestFacts];
      if (name && v !== undefined) this.span.setAttribute(name, v as string | number | boolean);
    }
  }

  responded(e: RequestEnd): void {
    const span = this.span;
    span.setAttribute(ATTR_HTTP_ROUTE, e.route);
    span.setAttribute(ATTR_URL_PATH, e.path);
    span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, e.status);
    span.setAttribute(REELAY.requestId, e.requestId);
    span.setAttribute(REELAY.route, e.route);
    if (!this.named) this.span.updateName(e.route === "unmatched" ? e.method : `${e.method} ${e.route}`);
    // server spans: 4xx is the client's error, not the server's (HTTP semantic conventions)
    if (e.status >= 500) this.span.setStatus({ code: SpanStatusCode.ERROR });
    this.response = e;
    this.maybeEnd();
  }

  /** the end of background work (a request's span ends with its response instead) */
  end(err?: unknown): void {
    if (this.finished) return;
    this.finished = true;
    if (err !== undefined) failed(this.span, err);
    this.maybeEnd();
  }

  private maybeEnd() {
    if (this.ended || (this.response === null && !this.finished) || this.holds > 0) return;
    this.ended = true;
    this.span.end();
  }

}

const NO_ATTEMPT: AttemptTrace = { end() {} };
const NO_SPAN: TraceSpan = {
  set() {},
  end() {},
  child: () => NO_SPAN,
  upstream: { attempt: () => NO_ATTEMPT, outgoing: () => ({}) },
};

/**
 * A request the sampler left out (a client's unsampled traceparent, a ratio): no span is recorded,
 * no attribute set, no child made; its W3C headers (the sampled flag off) still go to the upstream
 * and onto what it submits, so the decision travels on. Its headers are worked out once.
 */
class PropagatedTrace implements RequestTrace {
  readonly content = false;
  readonly upstream: CallTrace;
  private carrier: Record<string, string> | null = null;
  constructor(private readonly span: Span) {
    this.upstream = { attempt: () => NO_ATTEMPT, outgoing: () => ({ ...this.headers() }) };
  }
  private headers(): Record<string, string> {
    return (this.carrier ??= new SpanContexts(this.span).headers());
  }
  traceparent(): string {
    return this.headers().traceparent ?? "";
  }
  set(): void {}
  rename(): void {}
  child(): TraceSpan {
    return NO_SPAN;
  }
  hold(): () => void {
    return () => {};
  }
  note(): void {}
  responded(): void {}
}

/** server.address / server.port of upstream URLs, each origin parsed once (a model calls a few) */
function addressBook(): (url: string) => Attributes {
  const addresses = new Map<string, Attributes>();
  return (url) => {
    const end = url.indexOf("/", url.indexOf("//") + 2);
    const origin = end < 0 ? url : url.slice(0, end);
    let a = addresses.get(origin);
    if (a) return a;
    try {
      const u = new URL(url);
      a = { [ATTR_SERVER_ADDRESS]: u.hostname, [ATTR_SERVER_PORT]: Number(u.port || (u.protocol === "https:" ? 443 : 80)) };
    } catch {
      a = {}; // not a URL the plugin will manage to call either; no address to record
    }
    if (addresses.size < 1_000) addresses.set(origin, a);
    return a;
  };
}
