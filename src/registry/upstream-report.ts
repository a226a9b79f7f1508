/**
 * The upstream deployments of every model whose plugin routes over several (ModelInstance.upstreams):
 * what GET /admin/upstreams and the per-deployment metrics show. Read on demand, never cached: the
 * plugins' routers hold the state, per instance.
 */
import type { DeploymentStatus } from "../plugin-sdk/index.ts";
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
    openForMs: count(d.openForMs),
    opened: count(d.opened),
  };
}
