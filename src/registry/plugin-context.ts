import type { ModelConfig } from "../config.ts";
import type { Logger } from "../logger.ts";
import { pluginLogger } from "../logger.ts";
import type { HostServices, PluginContext, ReelayPlugin, SafeFetchOptions } from "../plugin-sdk/index.ts";
import type { ContextFactory } from "./model-registry.ts";

export interface ContextDeps {
  logger: Logger;
  env: Record<string, string | undefined>;
  safeFetchBytes: (url: string, opts: SafeFetchOptions) => Promise<{ bytes: Uint8Array; contentType: string | null }>;
  host: HostServices;
}

/** The context each model's plugin instance receives: its options, a logger, fetch, host services. */
export function contextFactory(deps: ContextDeps): ContextFactory {
  return (model: ModelConfig, plugin: ReelayPlugin): PluginContext => ({
    modelId: model.id,
    options: model.options,
    model: { maxOutputTokens: model.maxOutputTokens, contextLength: model.contextLength, pricing: model.pricing },
    logger: pluginLogger(deps.logger, plugin.name, model.id),
    env: (name) => deps.env[name],
    fetch: globalThis.fetch,
    safeFetchBytes: deps.safeFetchBytes,
    host: deps.host,
  });
}
