/**
 * What a model can do is which of these its instance implements: `chat`, `embeddings`, `video`.
 * Every call gets a CallOptions: the AbortSignal to pass on, the request id and a logger for it.
 * The host checks everything a call returns before it bills or relays it (docs/writing-a-plugin.md,
 * "What the host checks"); a result that breaks these types is answered 502 and nothing is charged.
 */
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest } from "./openai-chat.ts";
import type { DeploymentStatus } from "./router.ts";

export type Capability = "chat" | "embeddings" | "video";
export const CAPABILITIES: readonly Capability[] = ["chat", "embeddings", "video"];

export interface PluginLogger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export interface CallOptions {
  /** aborts when the client goes away, on a deadline, or at shutdown: pass it to every fetch */
  signal: AbortSignal;
  /** the id the client got in `x-request-id` (video: the job id), for the upstream's logs */
  requestId: string;
  /**
   * log lines carry plugin, model and requestId; a field of yours with one of the host's names
   * (plugin, model, requestId, jobId, level, time, msg) is written as `plugin_<name>` instead
   */
  logger: PluginLogger;
  /**
   * For plugins that spread calls over several upstream deployments (routed-call.ts calls it):
   * which deployment served the call and after how many attempts. The host puts both in the
   * request's log line. Absent when the host does not ask.
   */
  routed?(info: { deployment: string; attempts: number }): void;
}

/* -------------------------------------------------------------------- chat */

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens?: number;
}

export interface ChatResult {
  /** OpenAI's completion object; reelay sets `model` and makes `usage` say what was billed */
  completion: ChatCompletion;
  /**
   * What to bill, counted by you (a local model, or your own tokenizer): integers ≥ 0, the
   * completion at most max_tokens × n. Checked by the host: anything else is a broken plugin (502,
   * nothing charged). Only this is billed, never `completion.usage`.
   */
  usage?: TokenUsage;
  /**
   * For relays: the upstream's usage report exactly as received (any value). Billed when credible
   * (integers ≥ 0 within what the request allowed), otherwise reelay bills its own count and
   * records the anomaly. Ignored when `usage` is given. With neither, reelay counts.
   */
  upstreamUsage?: unknown;
}

/**
 * One streamed event, relayed to the client as `data: <data>\n\n`. `json` is `data` parsed (the
 * host bills and filters on it, and relays `data`); the SDK's chunk builders and stream readers
 * fill both. The end is `{ data: "[DONE]" }`.
 */
export type ChatStreamEvent = { data: "[DONE]"; json?: undefined } | { data: string; json: ChatCompletionChunk };

export interface ChatCapability {
  /**
   * true: the usage this capability returns is counted inside reelay by the model's own tokenizer
   * (a model run in process); usage rows record it as token_source "local", not "upstream".
   */
  countsTokens?: boolean;
  /** Non-streamed completion. */
  complete(body: ChatCompletionRequest, call: CallOptions): Promise<ChatResult>;
  /**
   * Streamed completion: resolves once the upstream accepted the request, then yields events as
   * they arrive; ends with `[DONE]`. Rules the host relies on:
   * - the host waits for your FIRST event before it answers 200: fail before it (throw) and the
   *   client gets a real status (502, 504 …); send a role chunk early only if nothing can fail after it
   * - usage goes in a last chunk with `choices: []` (hidden from clients that did not ask for
   *   `stream_options.include_usage`); running usage on content chunks (vLLM's
   *   continuous_usage_stats) lets a stream the client abandons be billed in the model's own tokens
   * - a failure after the first event: throw `stream_interrupted` (or the kind that fits); the
   *   client gets an SSE error event and pays for the tokens it received
   * Optional: without it, reelay answers `stream: true` from `complete()` as one content chunk.
   */
  stream?(body: ChatCompletionRequest, call: CallOptions): Promise<AsyncIterable<ChatStreamEvent>>;
}

/* -------------------------------------------------------------- embeddings */

export interface EmbeddingsRequest {
  /** the client's body; `model` is reelay's model id */
  body: { model: string; input: unknown; encoding_format?: "float" | "base64"; dimensions?: number; user?: string; [key: string]: unknown };
  /** `input` as a list of strings (empty when the client sent token arrays: read `body.input`) */
  inputs: string[];
}

export interface EmbeddingsResult {
  /** one entry per input, `index` 0..n-1; Float32Array / number[] vectors are encoded by the host */
  data: Array<{ index: number; embedding: Float32Array | number[] | string }>;
  /** counted by you: checked like chat's `usage` (prompt_tokens an integer ≥ 0) */
  usage?: { prompt_tokens: number; total_tokens?: number };
  /** for relays: the upstream's usage as received; billed when credible, else reelay's count */
  upstreamUsage?: unknown;
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
  embed(req: EmbeddingsRequest, call: CallOptions): Promise<EmbeddingsResult>;
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
  /**
   * after SDK 1.1.0, only for a capability with `remix: true`: this job remixes an earlier job of the same
   * model (POST /v1/videos/{id}/remix): its id and the handle your submit() gave it. `image` is then
   * the earlier job's source image.
   */
  remixOf?: { jobId: string; handle: string };
}

/** The sizes a video capability takes unless it says otherwise: the first API's three. */
export const DEFAULT_VIDEO_SIZES: readonly string[] = ["480x832", "832x480", "624x624"];
/** The clip lengths, in whole seconds, a video capability takes unless it says otherwise: 1 to 10. */
export const DEFAULT_VIDEO_SECONDS: readonly number[] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];

export type VideoPollResult =
  | { state: "queued" }
  /** progress: a fraction from 0 to 1 (not a percentage) */
  | { state: "running"; progress?: number }
  /** the MP4's bytes: they must start with an `ftyp` box */
  | { state: "succeeded"; mp4: Uint8Array }
  /** an http(s) URL the host downloads (SSRF-guarded; private addresses only with the model's allowPrivateNetwork) */
  | { state: "succeeded"; url: string }
  /** failed for good, unless `retryable` (then the host submits again later) */
  | { state: "failed"; code: string; message: string; retryable?: boolean }
  /** the provider no longer knows this handle (e.g. restarted): the host submits again */
  | { state: "lost" };

/** a handle is a non-empty string of at most this many characters (it is stored with the job) */
export const MAX_HANDLE_LENGTH = 1024;

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
  /**
   * after SDK 1.1.0: the output sizes ("WIDTHxHEIGHT", even numbers) this model renders; requests for any
   * other are refused with a 400 listing these. Default DEFAULT_VIDEO_SIZES. The models file may
   * narrow them (`sizes`), never widen them.
   */
  sizes?: readonly string[];
  /** after SDK 1.1.0: the clip lengths in whole seconds this model renders; default DEFAULT_VIDEO_SECONDS (1–10). The models file may narrow them. */
  seconds?: readonly number[];
  /** after SDK 1.1.0: submit() can remix an earlier job of this model (VideoRequest.remixOf); without it POST /v1/videos/{id}/remix is a 400 */
  remix?: boolean;
  /** submit a job; returns an opaque string handle the host saves before doing anything else */
  submit(req: VideoRequest, call: CallOptions): Promise<{ handle: string }>;
  poll(handle: string, call: CallOptions): Promise<VideoPollResult>;
  cancel?(handle: string, call: CallOptions): Promise<void>;
}

/* ---------------------------------------------------------------- instance */

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
  /**
   * Optional: the upstream deployments this instance routes over, with their circuit state and
   * counters (UpstreamRouter.status()), for GET /admin/upstreams and /metrics. Cheap; called per scrape.
   */
  upstreams?(): DeploymentStatus[];
}
