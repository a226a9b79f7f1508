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
    const deployments = m.instance.upstreams?.();
    if (deployments?.length) out.push({ model: m.id, plugin: m.plugin, deployments });
  }
  return out;
}
