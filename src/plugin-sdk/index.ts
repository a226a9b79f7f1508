/**
 * The plugin SDK: everything a provider plugin may rely on. Built-in plugins (plugins/*) and
 * external plugins loaded at run time use exactly these types. A plugin never touches the database
 * or billing: it takes a request and an AbortSignal and returns results, usage and progress.
 *
 * A plugin module default-exports a `ReelayPlugin` (usually `{...} satisfies ReelayPlugin`).
 * For every model configured with `plugin: "<name>"` the host calls `create(ctx)` once, with that
 * model's options in `ctx.options`; the returned object implements one or more capabilities.
 */

export const PLUGIN_API_VERSION = 1 as const;

/** Prices are integers in micro-dollars (1 USD = 1,000,000). */
export interface ModelPricing {
  /** chat + embeddings: per million input tokens */
  inputPerMillion?: number;
  /** chat: per million output tokens */
  outputPerMillion?: number;
  /** video: per second of output */
  perSecond?: number;
}

/** A model a plugin declares by itself (external plugins that bring their own models). */
export interface ModelDeclaration {
  id: string;
  pricing: ModelPricing;
  /** plugin options for this model, merged under any options given in the config file */
  options?: Record<string, unknown>;
  maxOutputTokens?: number;
  contextLength?: number;
  ownedBy?: string;
  /** what the model does, in a sentence or two (shown in GET /v1/models) */
  description?: string;
}

export interface PluginLogger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export interface SafeFetchOptions {
  /** refuse bodies larger than this (bytes) */
  maxBytes: number;
  /** whole request deadline, ms */
  timeoutMs: number;
  /** allow private / loopback targets (only when the operator configured it explicitly) */
  allowPrivateNetwork?: boolean;
  signal?: AbortSignal;
  headers?: Record<string, string>;
}

export interface PluginContext {
  /** the model id this instance serves */
  modelId: string;
  /** this model's plugin options from the config file (already merged with the declaration's) */
  options: Record<string, unknown>;
  /** model-level settings the host knows about */
  model: { maxOutputTokens?: number; contextLength?: number; pricing: ModelPricing };
  logger: PluginLogger;
  /** read an environment variable by name (secrets are named in options, never written there) */
  env(name: string): string | undefined;
  /** plain fetch: callers pass their own AbortSignal; used for configured upstreams */
  fetch: typeof fetch;
  /** SSRF-guarded download of a URL given by a client or a provider: size and time limited */
  safeFetchBytes(url: string, opts: SafeFetchOptions): Promise<{ bytes: Uint8Array; contentType: string | null }>;
  /** host-provided helpers, so a pre-bundled external plugin needs no packages of its own */
  host: HostServices;
}

export interface HostServices {
  /** decode PNG / JPEG / WebP to RGBA */
  decodeImage(bytes: Uint8Array): Promise<{ width: number; height: number; rgba: Uint8Array }>;
  /** encode RGBA frames into an H.264 MP4 (yuv420p, faststart) */
  encodeMp4(frames: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, opts: { width: number; height: number; fps: number }): Promise<Uint8Array>;
  /** count tokens the way reelay bills text when an upstream reports no usage */
  countTokens(text: string): number;
}

/* ------------------------------------------------------------------ errors */

/**
 * Thrown by plugins. `kind` decides how the host answers the client:
 * - `upstream_http`: the upstream answered with `status` (4xx is passed through, 5xx becomes 502)
 * - `connect`: connection refused / reset before any byte (502; may be retried before any byte)
 * - `timeout`: connect, first-byte or idle timeout (504)
 * - `malformed`: the upstream sent something that is not its protocol (502)
 * - `invalid_request`: the request cannot be served by this model (400, `param` names the field)
 * - `failed`: a video generation failed for good (job failed, no charge)
 * - `overloaded`: a local model is at capacity (503 with `Retry-After: retryAfterSeconds`, default 1)
 */
export type PluginErrorKind = "upstream_http" | "connect" | "timeout" | "malformed" | "invalid_request" | "failed" | "overloaded";

export class PluginError extends Error {
  readonly kind: PluginErrorKind;
  readonly status?: number;
  readonly code?: string;
  readonly param?: string | null;
  readonly retryable: boolean;
  readonly retryAfterSeconds?: number;
  constructor(kind: PluginErrorKind, message: string, opts: { status?: number; code?: string; param?: string | null; retryable?: boolean; retryAfterSeconds?: number; cause?: unknown } = {}) {
    super(message, { cause: opts.cause });
    this.name = "PluginError";
    this.kind = kind;
    this.status = opts.status;
    this.code = opts.code;
    this.param = opts.param ?? null;
    this.retryAfterSeconds = opts.retryAfterSeconds;
    this.retryable = opts.retryable ?? (kind === "connect" || kind === "timeout" || (kind === "upstream_http" && (opts.status ?? 0) >= 500) || opts.status === 429);
  }
}

/* -------------------------------------------------------------------- chat */

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens?: number;
}

export interface ChatCallOptions {
  signal: AbortSignal;
}

/** One server-sent event from the upstream, relayed to the client byte-for-byte as `data: <data>`. */
export interface ChatStreamEvent {
  /** the raw `data:` payload exactly as received (JSON text), or "[DONE]" */
  data: string;
  /** parsed JSON of `data` (undefined for [DONE]) */
  json?: any;
}

export interface ChatCapability {
  /** true: the usage it reports is counted inside reelay by the model's own tokenizer (a model run in process), recorded as token_source "local" */
  countsTokens?: boolean;
  /**
   * Non-streamed completion. `body` is the client's body with `model` already mapped and
   * `max_tokens`/`max_completion_tokens` clamped. Returns the upstream's completion object.
   */
  complete(body: Record<string, unknown>, opts: ChatCallOptions): Promise<{ completion: any; usage?: TokenUsage }>;
  /**
   * Streamed completion. Resolves once the upstream accepted the request (headers received), then
   * yields events as they arrive. Throws PluginError (before or during iteration).
   */
  stream(body: Record<string, unknown>, opts: ChatCallOptions): Promise<AsyncIterable<ChatStreamEvent>>;
}

/* -------------------------------------------------------------- embeddings */

export interface EmbeddingsRequest {
  /** the client's body with `model` mapped; `input` normalised to string[] in `inputs` */
  body: Record<string, unknown>;
  inputs: string[];
}

export interface EmbeddingsResult {
  /** Float32Array vectors are encoded by the host per `encoding_format`; other values are passed through */
  data: Array<{ index: number; embedding: Float32Array | number[] | string }>;
  usage: { prompt_tokens: number; total_tokens: number };
}

export interface EmbeddingsCapability {
  /** true when `dimensions` may be passed; otherwise the host rejects it with 400 */
  supportsDimensions: boolean;
  /**
   * limits the host enforces before calling embed; by default OpenAI's: 2,048 inputs, 8,192
   * tokens per input, 300,000 tokens per request (a plugin may only tighten them)
   */
  maxInputs?: number;
  maxInputTokens?: number;
  maxInputChars?: number;
  /**
   * tokens per input, by the model's own tokenizer (used for holds, limits and the bill); may be
   * async, so a big request can be counted without holding the event loop
   */
  countTokens?(inputs: string[]): number[] | Promise<number[]>;
  embed(req: EmbeddingsRequest, opts: { signal: AbortSignal }): Promise<EmbeddingsResult>;
}

/* ------------------------------------------------------------------- video */

export interface VideoRequest {
  /** reelay job id (stable across retries; useful as an idempotency key upstream) */
  jobId: string;
  prompt: string;
  negativePrompt?: string;
  image: { bytes: Uint8Array; mime: "image/png" | "image/jpeg" | "image/webp" };
  width: number;
  height: number;
  seconds: number;
  seed: number;
  steps?: number;
}

export type VideoPollResult =
  | { state: "queued" }
  | { state: "running"; progress?: number }
  | { state: "succeeded"; mp4: Uint8Array }
  | { state: "succeeded"; url: string }
  | { state: "failed"; code: string; message: string; retryable?: boolean }
  /** the provider no longer knows this handle (e.g. restarted): the host may submit again */
  | { state: "lost" };

export interface VideoCapability {
  /** jobs of this model in flight at once on one reelay instance */
  maxConcurrency?: number;
  /**
   * jobs of this model waiting for a slot (all instances together); past it, a submit is refused
   * with 503 + Retry-After instead of queueing for ever. Default: no bound.
   */
  maxQueued?: number;
  /** how long to wait between polls of one job, ms */
  pollIntervalMs?: number;
  /** submit a job; returns an opaque handle the host saves before doing anything else */
  submit(req: VideoRequest, opts: { signal: AbortSignal }): Promise<{ handle: string }>;
  poll(handle: string, opts: { signal: AbortSignal }): Promise<VideoPollResult>;
  cancel?(handle: string, opts: { signal: AbortSignal }): Promise<void>;
}

/* ------------------------------------------------------------------ plugin */

export interface ModelInstance {
  chat?: ChatCapability;
  embeddings?: EmbeddingsCapability;
  video?: VideoCapability;
  /**
   * Heavy start-up work (weights, worker threads, a warm-up pass), kept out of `create`, which must
   * stay cheap: reelay listens and serves before any model is loaded. The host calls `load` on the
   * model's first request, or in the background after start for models the operator preloads
   * (REELAY_PRELOAD_MODELS), never twice at once; capability calls wait for it (bounded, then 503
   * with Retry-After). /readyz shows the model as `loading`, `ready` or `failed`; after a
   * rejection a later request calls `load` again. `signal` aborts on shutdown.
   */
  load?(opts: { signal: AbortSignal }): Promise<void>;
  /**
   * Optional: free what `load` built. The host calls it once the model has had no call for
   * REELAY_MODEL_IDLE_SECONDS (never with a call in flight) and calls `load` again before the
   * next one, so an idle server gives its memory back.
   */
  unload?(): Promise<void> | void;
  /** called on shutdown */
  close?(): Promise<void> | void;
}

export interface ReelayPlugin {
  /** the name models refer to in config (`plugin: "<name>"`) */
  name: string;
  apiVersion: typeof PLUGIN_API_VERSION;
  /** models this plugin serves without any config entry (optional) */
  models?: ModelDeclaration[];
  /** return problems with a model's options, each naming the option (boot stops on any) */
  validateOptions?(options: Record<string, unknown>): string[];
  create(ctx: PluginContext): ModelInstance | Promise<ModelInstance>;
}

/* ----------------------------------------------------------------- helpers */

/**
 * Typed plugin definition with the API version filled in. Equivalent to writing
 * `{ apiVersion: PLUGIN_API_VERSION, ... } satisfies ReelayPlugin`; external plugins bundle this
 * (a few bytes), so a pre-built .js file still imports nothing at run time.
 */
export function definePlugin(plugin: Omit<ReelayPlugin, "apiVersion"> & { apiVersion?: typeof PLUGIN_API_VERSION }): ReelayPlugin {
  return { ...plugin, apiVersion: PLUGIN_API_VERSION };
}


/**
 * A response body, read as it streams, stopping at `maxBytes`: past it the read is cancelled and
 * `tooLarge()` is thrown, so an oversized answer never sits in memory whole.
 */
export async function readBodyCapped(res: Response, maxBytes: number, tooLarge: () => Error): Promise<Uint8Array> {
  if (!res.body) return new Uint8Array(0);
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
