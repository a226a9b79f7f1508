/**
 * What the registry needs from the host to create and call a model's plugin instance: the context
 * `create` receives (options, a logger, env, fetch, the SSRF-guarded download, host services, the
 * video hooks: wake a job, the public hook URL), and the site its calls are checked against
 * (plugin-host/checked-instance.ts).
 */
import type { ModelConfig } from "../config.ts";
import type { Logger } from "../logger.ts";
import type { HostServices, PluginContext, ReelayPlugin, SafeFetchOptions } from "../plugin-sdk/index.ts";
import { callLogger } from "../plugin-host/call-logger.ts";
import type { VideoSite } from "../plugin-host/checked-video.ts";
import { PluginSecrets } from "../plugin-host/secrets.ts";
import { VideoWakeups } from "../plugin-host/video-wakeups.ts";

/** what a plugin may put in its hook URL's last segment (it is logged and routed, never interpreted) */
const HOOK_TOKEN = /^[A-Za-z0-9_.:-]{1,128}$/;

export interface PluginHostDeps {
  logger: Logger;
  env: Record<string, string | undefined>;
  safeFetchBytes: (url: string, opts: SafeFetchOptions) => Promise<{ bytes: Uint8Array; contentType: string | null }>;
  host: HostServices & { close?(): void };
  /** REELAY_PUBLIC_URL: where a backend can reach reelay (null: no hook URLs, plugins poll) */
  publicUrl?: string | null;
}

export interface PluginHost {
  /** the context `create` gets; `options` are the validated ones, defaults filled in */
  context(model: ModelConfig, plugin: ReelayPlugin, options: Record<string, unknown>): PluginContext;
  site(model: ModelConfig, plugin: ReelayPlugin): VideoSite;
  /** the jobs plugins ask to have polled now (ctx.video.wake); the scheduler subscribes */
  wakeups: VideoWakeups;
  /** shutdown: the host services' workers */
  close(): void;
}

export function pluginHost(deps: PluginHostDeps): PluginHost {
  // per model: what its plugin read from the environment is redacted from what it relays or logs
  const secrets = new Map<string, PluginSecrets>();
  const secretsOf = (modelId: string) => secrets.get(modelId) ?? secrets.set(modelId, new PluginSecrets()).get(modelId)!;
  const wakeups = new VideoWakeups();
  const publicUrl = deps.publicUrl ?? null;
  return {
    wakeups,
    context: (model, plugin, options) => ({
      modelId: model.id,
      options,
      model: { maxOutputTokens: model.maxOutputTokens, contextLength: model.contextLength, pricing: model.pricing },
      logger: callLogger(deps.logger, { plugin: plugin.name, model: model.id }, secretsOf(model.id)),
      env: (name) => secretsOf(model.id).note(deps.env[name]),
      fetch: globalThis.fetch,
      safeFetchBytes: deps.safeFetchBytes,
      host: deps.host,
      video: {
        wake: (handle) => wakeups.wake(model.id, handle),
        webhookUrl: (token) => (publicUrl && HOOK_TOKEN.test(token) ? `${publicUrl}/v1/plugin-hooks/${encodeURIComponent(model.id)}/${token}` : undefined),
      },
    }),
    site: (model, plugin) => ({ plugin: plugin.name, model: model.id, logger: deps.logger, secrets: secretsOf(model.id), allowPrivateNetwork: model.allowPrivateNetwork === true, download: deps.safeFetchBytes }),
    close: () => deps.host.close?.(),
  };
}
