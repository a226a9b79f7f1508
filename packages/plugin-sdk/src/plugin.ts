/**
 * A plugin module default-exports a ReelayPlugin, usually `export default definePlugin({...})`.
 * For every model configured with `plugin: "<name>"` the host validates the model's options
 * against `options` (a TypeBox schema), then calls `create(ctx)` once; the returned instance
 * implements one or more capabilities (capabilities.ts). A plugin never touches the database or
 * billing: it takes a request and an AbortSignal and returns results, usage and progress.
 */
import type { Static, TSchema } from "@sinclair/typebox";
import type { ModelInstance, PluginLogger } from "./capabilities.ts";
import type { SafeFetchOptions } from "./safe-fetch.ts";
import { PLUGIN_API_VERSION, SDK_VERSION } from "./version.ts";

/** Prices are integers in micro-dollars (1 USD = 1,000,000). */
export interface ModelPricing {
  /** chat + embeddings: per million input tokens */
  inputPerMillion?: number;
  /** chat: per million output tokens */
  outputPerMillion?: number;
  /**
   * chat: per million prompt tokens the upstream read from its prompt cache (OpenAI's
   * `prompt_tokens_details.cached_tokens`, Anthropic's `cache_read_input_tokens`); without it they
   * cost `inputPerMillion`
   */
  cachedInputPerMillion?: number;
  /** chat: per million prompt tokens written to the upstream's prompt cache (Anthropic's `cache_creation_input_tokens`); without it, `inputPerMillion` */
  cacheWritePerMillion?: number;
  /** video: per second of output */
  perSecond?: number;
  /**
   * video: per second of output at a given size ("1280x720": 100000), over `perSecond` for that
   * size (after SDK 1.1.0). Every size the model takes needs a price here or a `perSecond`.
   */
  perSecondBySize?: Record<string, number>;
  /** batch lines (POST /v1/batches) cost this percentage of every price above (default 50) */
  batchPercent?: number;
}

/** A model a plugin declares by itself (served without any config entry). */
export interface ModelDeclaration {
  id: string;
  pricing: ModelPricing;
  /** plugin options for this model, merged under any options given in the models file */
  options?: Record<string, unknown>;
  maxOutputTokens?: number;
  contextLength?: number;
  ownedBy?: string;
  /** what the model does, in a sentence or two (shown in GET /v1/models) */
  description?: string;
}

export interface DecodedImage {
  width: number;
  height: number;
  /** width × height × 4 bytes, row-major, non-premultiplied */
  rgba: Uint8Array;
}

/** Heavy services the host lends, so a pre-bundled plugin needs no packages of its own for them. */
export interface HostServices {
  /** PNG / JPEG / WebP → RGBA; an undecodable image throws PluginError invalid_request, code `invalid_image` */
  decodeImage(bytes: Uint8Array): Promise<DecodedImage>;
  /**
   * RGBA frames → H.264 MP4 (yuv420p, moov first), encoded on a host worker thread: frames are
   * pulled one at a time as the encoder takes them, so a lazy generator keeps memory flat; the
   * frames may reuse one buffer (each is copied); `quantizer` 10 (best) … 51 (smallest), default 30
   */
  encodeMp4(frames: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, opts: { width: number; height: number; fps: number; quantizer?: number; signal?: AbortSignal }): Promise<Uint8Array>;
  /** count tokens the way reelay bills text when nothing else counted (cl100k) */
  countTokens(text: string): number;
}

export interface PluginContext<Options = Record<string, unknown>> {
  /** the model id this instance serves */
  modelId: string;
  /** this model's options: the models file over the declaration's, schema defaults filled in, validated */
  options: Options;
  /** model-level settings the host knows about */
  model: { maxOutputTokens?: number; contextLength?: number; pricing: ModelPricing };
  /** lines carry plugin and model; per call, prefer CallOptions.logger (it adds the request id) */
  logger: PluginLogger;
  /** read an environment variable by name (secrets are named in options, never written there) */
  env(name: string): string | undefined;
  /** plain fetch for configured upstreams: always pass the call's AbortSignal */
  fetch: typeof fetch;
  /** SSRF-guarded download of a URL a client or provider gave: size and time limited; throws SafeFetchError */
  safeFetchBytes(url: string, opts: SafeFetchOptions): Promise<{ bytes: Uint8Array; contentType: string | null }>;
  host: HostServices;
  /**
   * For video backends that push (a websocket, a webhook) — SDK 1.2; absent on older hosts, so
   * keep polling as the fallback: `ctx.video?.wake(handle)`.
   */
  video?: VideoHostHooks;
}

/** What a video plugin may ask of the host between calls (SDK 1.2). */
export interface VideoHostHooks {
  /**
   * Poll the job with this handle now, wherever it runs (this instance or another one on the same
   * database), instead of after its poll interval: call it when the backend says the job ended.
   * Unknown or finished handles are ignored. Never throws.
   */
  wake(handle: string): void;
  /**
   * The public URL whose POSTs reach this model's `video.webhook()` with `token` (letters, digits,
   * `_`, `-`, `.`, `:`; at most 128), or undefined when reelay has no public URL configured
   * (REELAY_PUBLIC_URL): then poll instead of asking the backend to call back.
   */
  webhookUrl(token: string): string | undefined;
}

/** The options' type: what the schema describes, or any object when the plugin declares no schema. */
export type OptionsOf<Schema extends TSchema> = unknown extends Static<Schema> ? Record<string, unknown> : Static<Schema>;

export interface ReelayPlugin<Schema extends TSchema = TSchema> {
  /** the name models refer to in config (`plugin: "<name>"`) */
  name: string;
  /** the contract this plugin was built for; the host refuses any other at boot */
  apiVersion: typeof PLUGIN_API_VERSION;
  /** the @reelay/plugin-sdk version it was built with (set by definePlugin; shown in the boot log) */
  sdkVersion?: string;
  /** models this plugin serves without any config entry (optional) */
  models?: ModelDeclaration[];
  /**
   * A model's options as a schema (`Type.Object({...})` from this SDK). The host validates every
   * model's options against it at boot, fills in `default`s, and stops with messages naming
   * plugin, model and option. Use `additionalProperties: false` to refuse unknown options.
   */
  options?: Schema;
  /** checks a schema cannot express (one option against another); problems, each naming its option */
  validateOptions?(options: OptionsOf<Schema>): string[];
  create(ctx: PluginContext<OptionsOf<Schema>>): ModelInstance | Promise<ModelInstance>;
}

export type PluginDefinition<Schema extends TSchema> = Omit<ReelayPlugin<Schema>, "apiVersion" | "sdkVersion"> & { apiVersion?: typeof PLUGIN_API_VERSION };

/**
 * The plugin with `apiVersion` and `sdkVersion` filled in; `ctx.options` is typed from `options`.
 * External plugins bundle this (a few bytes), so the built .js file still imports nothing.
 */
export function definePlugin<Schema extends TSchema = TSchema>(plugin: PluginDefinition<Schema>): ReelayPlugin {
  // the schema's type has done its work (typing ctx.options inside the definition); the host sees any plugin alike
  return { ...plugin, apiVersion: PLUGIN_API_VERSION, sdkVersion: SDK_VERSION } as unknown as ReelayPlugin;
}
