/**
 * Plugins (built-in and from the plugins directory) and the model registry, as boot needs them:
 * no model is loaded yet (model-loader.ts loads each on its first request or preload).
 */
import type { Config } from "../config.ts";
import { ConfigError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import { hostServices, safeFetchBytes } from "../plugin-host/host-services.ts";
import { builtinPlugins } from "./builtin-plugins.ts";
import { describeModel } from "./describe-model.ts";
import { loadExternalPlugins } from "./load-external-plugins.ts";
import { buildRegistry, resolveModelList, type ModelRegistry } from "./model-registry.ts";
import { pluginHost } from "./plugin-context.ts";
import { warmTokenCounter } from "../text/tokens.ts";

export async function buildModels(config: Config, logger: Logger): Promise<ModelRegistry> {
  const external = await loadExternalPlugins(config.pluginsDir, logger, builtinPlugins.map((p) => p.name));
  const plugins = new Map([...builtinPlugins, ...external].map((p) => [p.name, p]));
  const models = resolveModelList(config.models, builtinPlugins, external, config.builtinModels);
  const unknown = config.preloadModels === "all" ? [] : config.preloadModels.filter((id) => !models.some((m) => m.id === id));
  if (unknown.length) throw new ConfigError("REELAY_PRELOAD_MODELS", `no model named ${unknown.map((id) => `"${id}"`).join(", ")} (models: ${models.map((m) => m.id).join(", ")})`);
  const registry = await buildRegistry(models, plugins, pluginHost({ logger, env: process.env, safeFetchBytes, host: hostServices(), publicUrl: config.publicUrl }), {
    waitMs: config.loadWaitMs,
    retryAfterMs: 10_000,
    idleUnloadMs: config.modelIdleMs,
    warmHostTokenizer: warmTokenCounter,
    log: logger.child({ component: "models" }),
  });
  for (const m of registry.list()) logger.info(describeModel(m), "model served");
  return registry;
}
