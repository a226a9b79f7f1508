/** OpenTelemetry's standard exporter variables (OTEL_*), read the way the OTLP exporter spec says. */
import { ConfigError } from "../errors.ts";
import { bool, int, str, type Env } from "./env.ts";

/** The standard OpenTelemetry exporter variables reelay reads, and its own content opt-in. */
export interface TracingConfig {
  /** the OTLP/HTTP traces URL (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces) */
  url: string;
  /** OTEL_EXPORTER_OTLP_(TRACES_)HEADERS: `key=value,…`, values URL-decoded */
  headers: Record<string, string>;
  /** http/protobuf (the default) or http/json */
  protocol: "http/protobuf" | "http/json";
  /** OTEL_SERVICE_NAME, default "reelay" */
  serviceName: string;
  /** OTEL_TRACES_SAMPLER (default parentbased_always_on) and OTEL_TRACES_SAMPLER_ARG (its ratio, 0..1) */
  sampler: "always_on" | "always_off" | "traceidratio" | "parentbased_always_on" | "parentbased_always_off" | "parentbased_traceidratio";
  ratio: number;
  /** OTEL_BSP_SCHEDULE_DELAY: longest a finished span waits to be exported in a batch, ms (default 5000) */
  scheduleDelayMs: number;
  /** REELAY_TRACE_CONTENT: record prompts and answers on the spans (gen_ai.input.messages / gen_ai.output.messages); default false */
  content: boolean;
}

const SAMPLERS = ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"] as const;

/** Off unless an OTLP endpoint is set (and OTEL_SDK_DISABLED is not true). */
export function tracingConfig(env: Env): TracingConfig | null {
  if (bool(env, "OTEL_SDK_DISABLED", false)) return null;
  const signal = str(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const base = str(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  if (!signal && !base) return null;
  // the spec: the signal's own variable is used as is; the base one gets /v1/traces appended
  const url = signal ?? `${base!.replace(/\/+$/, "")}/v1/traces`;
  const key = signal ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT";
  if (!/^https?:\/\/[^/]/.test(url)) throw new ConfigError(key, `must be an http or https URL, got "${url}"`);
  const protocol = str(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") ?? str(env, "OTEL_EXPORTER_OTLP_PROTOCOL") ?? "http/protobuf";
  if (protocol !== "http/protobuf" && protocol !== "http/json") throw new ConfigError("OTEL_EXPORTER_OTLP_PROTOCOL", `must be http/protobuf or http/json (gRPC is not built in), got "${protocol}"`);
  const sampler = (str(env, "OTEL_TRACES_SAMPLER") ?? "parentbased_always_on").toLowerCase();
  if (!(SAMPLERS as readonly string[]).includes(sampler)) throw new ConfigError("OTEL_TRACES_SAMPLER", `must be one of ${SAMPLERS.join(", ")}, got "${sampler}"`);
  const rawRatio = str(env, "OTEL_TRACES_SAMPLER_ARG");
  const ratio = rawRatio === null ? 1 : Number(rawRatio);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) throw new ConfigError("OTEL_TRACES_SAMPLER_ARG", `must be a number from 0 to 1, got "${rawRatio}"`);
  return {
    url, protocol, ratio,
    sampler: sampler as TracingConfig["sampler"],
    headers: { ...otlpHeaders(env, "OTEL_EXPORTER_OTLP_HEADERS"), ...otlpHeaders(env, "OTEL_EXPORTER_OTLP_TRACES_HEADERS") },
    serviceName: str(env, "OTEL_SERVICE_NAME") ?? "reelay",
    scheduleDelayMs: int(env, "OTEL_BSP_SCHEDULE_DELAY", 5_000, 1, 600_000),
    content: bool(env, "REELAY_TRACE_CONTENT", false),
  };
}

/** `api-key=secret,x-org=a%20b`: the W3C baggage-like list the OTLP exporter spec uses */
function otlpHeaders(env: Env, key: string): Record<string, string> {
  const raw = str(env, key);
  const out: Record<string, string> = {};
  if (!raw) return out;
  for (const pair of raw.split(",")) {
    const at = pair.indexOf("=");
    if (at <= 0) throw new ConfigError(key, "expected comma-separated key=value pairs");
    try {
      out[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      throw new ConfigError(key, `the value of "${pair.slice(0, at).trim()}" is not URL-encoded correctly`);
    }
  }
  return out;
}
