/**
 * What the registry needs from the host to create and call a model's plugin instance: the context
 * `create` receives (options, a logger, env, fetch, the SSRF-guarded download, host services), and
 * the site its calls are checked against (plugin-host/checked-instance.ts).
 */
import type { ModelConfig } from "../config.ts";
import type { Logger } from "../logger.ts";
import type { HostServices, PluginContext, ReelayPlugin, SafeFetchOptions } from "../plugin-sdk/index.ts";
import { callLogger } from "../plugin-host/call-logger.ts";
import type { VideoSite } from "../plugin-host/checked-video.ts";
import { PluginSecrets } from "../plugin-host/secrets.ts";

export interface PluginHostDeps {
  logger: Logger;
  env: Record<string, string | undefined>;
  safeFetchBytes: (url: string, opts: SafeFetchOptions) => Promise<{ bytes: Uint8Array; contentType: string | null }>;
  host: HostServices & { close?(): void };
}

export interface PluginHost {
  /** the context `create` gets; `options` are the validated ones, defaults filled in */
  context(model: ModelConfig, plugin: ReelayPlugin, options: Record<string, unknown>): PluginContext;
  site(model: ModelConfig, plugin: ReelayPlugin): VideoSite;
  /** shutdown: the host services' workers */
  close(): void;
}

export function pluginHost(deps: PluginHostDeps): PluginHost {
  // per model: what its plugin read from the environment is redacted from what it relays or logs
  const secrets = new Map<string, PluginSecrets>();
  const secretsOf = (modelId: string) => secrets.get(modelId) ?? secrets.set(modelId, new PluginSecrets()).get(modelId)!;
  return {
    context: (model, plugin, options) => ({
      modelId: model.id,
      options,
      model: { maxOutputTokens: model.maxOutputTokens, contextLength: model.contextLength, pricing: model.pricing },
      logger: callLogger(deps.logger, { plugin: plugin.name, model: model.id }, secretsOf(model.id)),
      env: (name) => secretsOf(model.id).note(deps.env[name]),
      fetch: globalThis.fetch,
      safeFetchBytes: deps.safeFetchBytes,
      host: deps.host,
    }),
    site: (model, plugin) => ({ plugin: plugin.name, model: model.id, logger: deps.logger, secrets: secretsOf(model.id), allowPrivateNetwork: model.allowPrivateNetwork === true, download: deps.safeFetchBytes }),
    close: () => deps.host.close?.(),
  };
}
