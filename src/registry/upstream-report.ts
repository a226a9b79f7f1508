/**
 * The upstream deployments of every model whose plugin routes over several (ModelInstance.upstreams):
 * what GET /admin/upstreams and the per-deployment metrics show. Read on demand, never cached: the
 * plugins' routers hold the state, per instance.
 */
import type { DeploymentStatus, LatencyHistogram } from "../plugin-sdk/index.ts";
import type { ModelRegistry } from "./model-registry.ts";

export interface ModelUpstreams {
  model: string;
  plugin: string;
  deployments: DeploymentStatus[];
}

export function upstreamReport(registry: Pick<ModelRegistry, "list">): ModelUpstreams[] {
  const out: ModelUpstreams[] = [];
  for (const m of registry.list()) {
    const deployments = m.instance.upstreams?.().map(sane).filter((d): d is DeploymentStatus => d !== null);
    if (deployments?.length) out.push({ model: m.id, plugin: m.plugin, deployments });
  }
  return out;
}

const count = (v: unknown) => (Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : 0);
const real = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** A deployment as a plugin reported it, each field checked (an external plugin may be older or broken); null without a name. */
function sane(d: DeploymentStatus): DeploymentStatus | null {
  if (typeof d?.name !== "string" || !d.name) return null;
  const errors: Record<string, number> = {};
  if (d.errors && typeof d.errors === "object") for (const [k, v] of Object.entries(d.errors)) errors[k] = count(v);
  return {
    name: d.name.slice(0, 128),
    weight: real(d.weight) ?? 0,
    maxConcurrent: Number.isSafeInteger(d.maxConcurrent) ? d.maxConcurrent : null,
    state: d.state === "open" || d.state === "half_open" ? d.state : "closed",
    inFlight: count(d.inFlight),
    requests: count(d.requests),
    successes: count(d.successes),
    errors,
    recentErrorRate: real(d.recentErrorRate),
    recentRequests: count(d.recentRequests),
    latencyMs: real(d.latencyMs),
    latency: histogram(d.latency),
    openForMs: count(d.openForMs),
    opened: count(d.opened),
  };
}

/** A histogram as a plugin reported it, kept only when it is one: ascending bounds, cumulative counts, at most 64 buckets. */
function histogram(h: LatencyHistogram | undefined): LatencyHistogram | undefined {
  if (!h || !Array.isArray(h.le) || !Array.isArray(h.counts) || h.le.length !== h.counts.length || h.le.length > 64) return undefined;
  const count = real(h.count), sum = real(h.sumSeconds);
  if (count === null || sum === null || !Number.isSafeInteger(count) || count < 0) return undefined;
  for (let i = 0; i < h.le.length; i++) {
    const le = real(h.le[i]), n = h.counts[i];
    if (le === null || !Number.isSafeInteger(n) || (n as number) < 0 || (n as number) > count) return undefined;
    if (i > 0 && (le <= h.le[i - 1]! || (n as number) < h.counts[i - 1]!)) return undefined;
  }
  return { le: [...h.le], counts: [...h.counts], count, sumSeconds: sum };
}
