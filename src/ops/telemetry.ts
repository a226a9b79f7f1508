/**
 * The Telemetry seam (hooks.ts) backed by the Prometheus metrics, plus one log line per video job
 * state change (the request log covers everything synchronous).
 */
import type { Logger } from "../logger.ts";
import type { Telemetry } from "./hooks.ts";
import type { OpsMetrics } from "./metrics.ts";

export function createTelemetry(metrics: OpsMetrics, logger: Logger): Telemetry {
  return {
    upstream(e) {
      metrics.upstreamDuration.observe({ plugin: e.plugin, model: e.model, outcome: e.outcome }, Math.max(0, e.ms) / 1000);
      if (e.outcome === "error") metrics.upstreamErrors.inc({ plugin: e.plugin, model: e.model, kind: e.errorKind ?? "error" });
    },
    charged(e) {
      if (e.micros > 0) metrics.credits.inc({ model: e.model, kind: e.kind }, e.micros);
      if (e.promptTokens && e.promptTokens > 0) metrics.tokens.inc({ model: e.model, kind: e.kind, type: "prompt" }, e.promptTokens);
      if (e.completionTokens && e.completionTokens > 0) metrics.tokens.inc({ model: e.model, kind: e.kind, type: "completion" }, e.completionTokens);
      if (e.seconds && e.seconds > 0) metrics.videoSeconds.inc({ model: e.model }, e.seconds);
    },
    videoTransition(e) {
      metrics.videoTransitions.inc({ model: e.model, from: e.from ?? "none", to: e.to });
      logger.info({ jobId: e.jobId, model: e.model, from: e.from, to: e.to, accountId: e.accountId }, "video job transition");
    },
  };
}
