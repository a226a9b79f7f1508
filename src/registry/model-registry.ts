/**
 * The model registry: model id -> plugin instance, pricing and limits. Built once at boot from the
 * configured models (or the built-in defaults) plus models that loaded plugins declare. What a model
 * can do is whatever capabilities its instance implements; the core never looks at plugin names.
 */
import type { Config, ModelConfig } from "../config.ts";
import { ConfigError } from "../errors.ts";
import { checkModelNames } from "../models-file.ts";
import { CAPABILITIES, problemsWithInstance, type Capability, type ModelInstance, type ModelPricing, type ReelayPlugin } from "../plugin-sdk/index.ts";
import type { Scope } from "../accounts/api-keys.ts";
import { checkedInstance } from "../plugin-host/checked-instance.ts";
import type { HostInstance } from "../plugin-host/types.ts";
import { ModelLoader, waitingInstance, type LoaderLog, type LoaderOptions, type ModelStatus } from "./model-loader.ts";
import type { PluginHost } from "./plugin-context.ts";
import type { VideoWakeups } from "../plugin-host/video-wakeups.ts";
import { validatedOptions } from "./validate-options.ts";
import { videoShape, type VideoShape } from "./video-shape.ts";

export type { Capability };

export interface RegisteredModel {
  /** the name it is listed, billed and answered under */
  id: string;
  /** other names that resolve to it (models file `aliases`) */
  aliases: string[];
  plugin: string;
  pricing: ModelPricing;
  maxOutputTokens?: number;
  contextLength?: number;
  ownedBy: string;
  description?: string;
  createdAt: number;
  capabilities: Capability[];
  /** video models: the sizes and seconds it takes, and whether it can remix (video-shape.ts) */
  video?: VideoShape;
  /** models tried in order when this one fails before any output (chat, embeddings); checked at boot */
  fallbacks: string[];
  /**
   * the plugin's instance as the host calls it: results checked, errors branded
   * (plugin-host/checked-instance.ts); each capability call waits until the model is loaded (model-loader.ts)
   */
  instance: HostInstance;
  /**
   * Wait until the model is loaded (bounded; 503 model_loading past the wait). A route calls it
   * before host-side work that needs what loading builds — the prompt estimate needs the cl100k
   * counter, whose build is part of loading a chat model (200–400 ms, in slices) — so a model's
   * first request never builds it in one block on the event loop.
   */
  ready(signal?: AbortSignal): Promise<void>;
}

export interface ModelRegistry {
  /** the model with this id or alias */
  get(name: string): RegisteredModel | undefined;
  list(): RegisteredModel[];
  /** each model's load state, for /readyz */
  statuses(): ModelStatus[];
  /** start loading these models in the background ("all": every model); a failure only marks the model failed */
  preload(ids: string[] | "all"): void;
  /** video jobs the models' plugins ask to have polled now (ctx.video.wake); the scheduler subscribes */
  wakeups: VideoWakeups;
  close(): Promise<void>;
}

/**
 * waitMs: how long a request waits for its model to load before a 503; retryAfterMs: a failed load
 * is tried again by a request arriving this long after the failure; idleUnloadMs: 0 never unloads;
 * warmHostTokenizer: builds reelay's own token counter (cl100k), part of loading any model whose
 * requests are counted with it.
 */
export type LoadPolicy = LoaderOptions & { warmHostTokenizer?: () => Promise<void> };

/**
 * Chat requests (holds, and billing when an upstream reports no usage) and embeddings of models
 * without their own tokenizer are counted with reelay's cl100k counter: for those models it is
 * built as part of the model's load (in parallel with the plugin's own), not by a request.
 */
function withHostTokenizer(instance: HostInstance, warm: (() => Promise<void>) | undefined): HostInstance {
  const needs = instance.chat !== undefined || (instance.embeddings !== undefined && !instance.embeddings.countTokens);
  if (!warm || !needs) return instance;
  const load = instance.load?.bind(instance);
  return Object.assign(Object.create(instance) as HostInstance, {
    load: async (opts: { signal: AbortSignal }) => {
      await Promise.all([load?.(opts), warm()]);
    },
  });
}

const QUIET: LoaderLog = { info: () => {}, error: () => {} };

/**
 * The models to serve: the config file's list first (so `models[i]` in errors is the file's entry i),
 * then the built-in plugins' declared models unless `keepBuiltins` is false (a file entry with a
 * built-in's id replaces it), then external plugins'.
 */
export function resolveModelList(configured: ModelConfig[] | null, builtin: ReelayPlugin[], external: ReelayPlugin[], keepBuiltins = true): ModelConfig[] {
  const fromDecl = (p: ReelayPlugin): ModelConfig[] =>
    (p.models ?? []).map((d) => ({ id: d.id, plugin: p.name, options: d.options ?? {}, pricing: d.pricing, maxOutputTokens: d.maxOutputTokens, contextLength: d.contextLength, ownedBy: d.ownedBy, description: d.description }));
  const fileIds = new Set((configured ?? []).map((m) => m.id));
  const builtins = keepBuiltins ? builtin.flatMap(fromDecl).filter((m) => !fileIds.has(m.id)) : [];
  const list: ModelConfig[] = [...(configured ?? []), ...builtins];
  const claimedBy = new Map(list.map((m) => [m.id, m.plugin]));
  for (const p of external) {
    for (const m of fromDecl(p)) {
      const owner = claimedBy.get(m.id);
      if (owner && owner !== p.name) throw new ConfigError(`model "${m.id}"`, `claimed by both plugin "${owner}" and plugin "${p.name}"`);
      if (owner) {
        // configured entry for an external plugin's model: config values win over the declaration
        const i = list.findIndex((x) => x.id === m.id);
        const c = list[i]!;
        list[i] = { ...m, ...c, options: { ...m.options, ...c.options }, pricing: { ...m.pricing, ...c.pricing } };
      } else {
        list.push(m);
        claimedBy.set(m.id, p.name);
      }
    }
  }
  return list;
}

/**
 * Create every model's instance. `create` is cheap by contract (no weights, no threads), so this
 * runs before the server is ready; heavy loading is each instance's `load`, run by a ModelLoader.
 */
export async function buildRegistry(
  models: ModelConfig[],
  plugins: Map<string, ReelayPlugin>,
  host: PluginHost,
  policy: LoadPolicy = { waitMs: 60_000, retryAfterMs: 10_000, idleUnloadMs: 0, log: QUIET },
): Promise<ModelRegistry> {
  checkModelNames(models);
  const byId = new Map<string, RegisteredModel>();
  const loaders = new Map<string, ModelLoader>();
  const now = Math.floor(Date.now() / 1000);
  for (const [i, m] of models.entries()) {
    const plugin = plugins.get(m.plugin);
    if (!plugin) throw new ConfigError(`models[${i}].plugin`, `no plugin named "${m.plugin}" (available: ${[...plugins.keys()].join(", ")})`);
    const options = validatedOptions(plugin, m, `models[${i}]`);
    let instance: ModelInstance;
    try {
      instance = await plugin.create(host.context(m, plugin, options));
    } catch (e) {
      throw new ConfigError(`models[${i}]`, `plugin "${m.plugin}" failed to create model "${m.id}": ${(e as Error)?.message ?? String(e)}`);
    }
    const problems = problemsWithInstance(instance);
    if (problems.length) throw new ConfigError(`models[${i}]`, `plugin "${m.plugin}" gave model "${m.id}" an unusable instance: ${problems.join("; ")}`);
    const capabilities = CAPABILITIES.filter((c) => instance[c]);
    const video = instance.video ? videoShape(instance.video, m, `models[${i}]`) : undefined;
    const managed = withHostTokenizer(checkedInstance(instance, host.site(m, plugin)), policy.warmHostTokenizer);
    const loader = new ModelLoader(m.id, managed, policy);
    loaders.set(m.id, loader);
    byId.set(m.id, { id: m.id, aliases: m.aliases ?? [], plugin: m.plugin, pricing: m.pricing, maxOutputTokens: m.maxOutputTokens, contextLength: m.contextLength, ownedBy: m.ownedBy ?? "reelay", description: m.description, createdAt: now, capabilities, video, fallbacks: m.fallbacks ?? [], instance: waitingInstance(managed, loader), ready: (signal) => loader.ready(signal) });
  }
  const byName = new Map(byId);
  for (const m of byId.values()) for (const alias of m.aliases) byName.set(alias, m);
  checkFallbacks(models, byName);
  return {
    get: (name) => byName.get(name),
    list: () => [...byId.values()],
    statuses: () => [...loaders.values()].map((l) => l.status()),
    wakeups: host.wakeups,
    preload(ids) {
      for (const l of loaders.values()) if (ids === "all" || ids.includes(l.id)) l.start().catch(() => {}); // logged by the loader
    },
    close: async () => {
      for (const l of loaders.values()) l.close();
      await Promise.allSettled([...byId.values()].map((m) => m.instance.close?.()));
      host.close();
    },
  };
}

/** Every fallback names another served model that can do what this model does (chat, embeddings). */
function checkFallbacks(models: ModelConfig[], byName: Map<string, RegisteredModel>): void {
  for (const [i, m] of models.entries()) {
    const self = byName.get(m.id)!;
    for (const id of m.fallbacks ?? []) {
      const at = `models[${i}].fallbacks`;
      const other = byName.get(id);
      if (id === m.id || other === self) throw new ConfigError(at, `model "${m.id}" lists itself as a fallback${id === m.id ? "" : ` (by its alias "${id}")`}`);
      if (!other) throw new ConfigError(at, `model "${m.id}": no model named "${id}" to fall back to (models: ${[...new Set([...byName.values()].map((x) => x.id))].join(", ")})`);
      const needs = self.capabilities.filter((c) => c === "chat" || c === "embeddings");
      if (!needs.length) throw new ConfigError(at, `model "${m.id}": fallbacks apply to chat and embeddings models; it serves ${self.capabilities.join(", ")}`);
      if (!needs.some((c) => other.capabilities.includes(c))) throw new ConfigError(at, `model "${m.id}" cannot fall back to "${id}": it serves ${other.capabilities.join(", ")}, not ${needs.join(" or ")}`);
    }
  }
}

/** May this key use this model? (allowed-model list, which may name it by an alias, and capability scopes) */
export function keyMayUse(model: RegisteredModel, key: { scopes: Scope[] | null; allowedModels: string[] | null }): boolean {
  if (key.allowedModels && !key.allowedModels.includes(model.id) && !model.aliases.some((a) => key.allowedModels!.includes(a))) return false;
  if (key.scopes && !model.capabilities.some((c) => key.scopes!.includes(c))) return false;
  return true;
}
