/**
 * What a model can do is which of these its instance implements: `chat`, `embeddings`, `video`.
 * Every call gets a CallOptions: the AbortSignal to pass on, the request id and a logger for it.
 * The host checks everything a call returns before it bills or relays it (docs/writing-a-plugin.md,
 * "What the host checks"); a result that breaks these types is answered 502 and nothing is charged.
 */
import type { AnthropicMessage, MessagesRequest, MessagesStreamEvent } from "./anthropic-messages.ts";
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
  /**
   * The request's trace (OpenTelemetry, W3C trace context), when the operator turned tracing on
   * and the request is sampled; absent otherwise. `callUpstream` puts its headers on every
   * upstream request and `routedCall` makes a span per attempt, so a plugin using both needs
   * nothing more. A plugin with its own HTTP client adds `trace.outgoing(url)` to its headers.
   */
  trace?: CallTrace;
}

/** The trace of one plugin call (SDK 1.5): how its upstream requests join the client's trace. */
export interface CallTrace {
  /**
   * Headers for an HTTP request to `url` made now (`traceparent`, and `tracestate` when the client
   * sent one): they carry the open attempt's span, else the request's. Records the address on it.
   */
  outgoing(url: string): Record<string, string>;
  /** One attempt on an upstream deployment: a span from now until `end` (err: the attempt failed). */
  attempt(info: { deployment?: string; attempt: number }): AttemptTrace;
}

export interface AttemptTrace {
  end(err?: unknown): void;
}

/* -------------------------------------------------------------------- chat */

export interface TokenUsage {
  /** every prompt token, those read from or written to a prompt cache included */
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens?: number;
  /** of prompt_tokens: read from a prompt cache (`cached_tokens`) and written to one (`cache_write_tokens`), billed at the model's cache prices */
  prompt_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number; [key: string]: unknown } | null;
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

/* ---------------------------------------------------------------- messages */

/** CallOptions of a `messages` call: what the client sent besides its body. */
export interface MessagesCallOptions extends CallOptions {
  /** the client's `anthropic-version` header (absent: it sent none) */
  anthropicVersion?: string;
  /** the client's `anthropic-beta` header, split at commas (absent: none) */
  anthropicBeta?: string[];
}

export interface MessagesResult {
  /** the answer as the client gets it; reelay sets `model` to the name the client asked for (a fallback's id when one served) and makes `usage` say what was billed */
  message: AnthropicMessage;
  /**
   * The upstream's usage report exactly as received (Anthropic's shape: `input_tokens`,
   * `output_tokens`, `cache_read_input_tokens`, `cache_creation_input_tokens`). Billed when
   * credible, like chat's `upstreamUsage`; never `message.usage` itself.
   */
  upstreamUsage?: unknown;
}

/**
 * Optional, beside `chat`: the model's upstream speaks Anthropic's Messages API itself, and a
 * client calling reelay's `/v1/messages` for this model is passed through natively (no
 * translation: thinking signatures, `cache_control` and betas reach the upstream as sent). Every
 * other API (chat completions, Responses …) still goes through `chat`. Checked and billed by the
 * host like `chat`: the same allowance, usage judged before it is billed, errors by their kind.
 */
export interface MessagesCapability {
  /** Non-streamed: the upstream's `message` object. */
  create(body: MessagesRequest, call: MessagesCallOptions): Promise<MessagesResult>;
  /**
   * Streamed, with chat's rules: resolve once the upstream accepted, the first event decides the
   * status (fail before it and the client gets a real error status), then the upstream's events
   * as they arrive, `message_stop` last. Usage is read from `message_start` and `message_delta`.
   * An upstream `error` event is thrown as a PluginError (`overloaded`, `stream_interrupted` …),
   * never yielded: the host writes the client's error event after billing what was delivered.
   * Optional: without it, reelay answers `stream: true` for this model through `chat`.
   */
  stream?(body: MessagesRequest, call: MessagesCallOptions): Promise<AsyncIterable<MessagesStreamEvent>>;
  /** POST /v1/messages/count_tokens for this model, asked of the upstream. Optional: reelay counts itself without it. */
  countTokens?(body: Omit<MessagesRequest, "max_tokens"> & { max_tokens?: number }, call: MessagesCallOptions): Promise<{ input_tokens: number }>;
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
  /**
   * Optional (SDK 1.2): a POST the backend sent to this model's hook URL (`ctx.video.webhookUrl`),
   * handed over as it arrived. Verify it (a signature over the raw body: `verifyStandardWebhook`)
   * before believing it: the route carries no API key. Answer `{ accepted: false }` for anything
   * not genuine (the sender gets 401 and nothing happens), or `{ accepted: true, wake }` with the
   * handles of the jobs it says changed: the host polls them at once instead of at their next poll.
   */
  webhook?(req: VideoWebhookRequest, call: CallOptions): Promise<VideoWebhookResult>;
}

/** An inbound POST to `/v1/plugin-hooks/{model}/{token}`, for VideoCapability.webhook. */
export interface VideoWebhookRequest {
  /** the URL's last segment: what your plugin put in `ctx.video.webhookUrl(token)` */
  token: string;
  /** the request's headers, names in lower case */
  headers: Record<string, string>;
  /** the raw body (signatures are computed over these exact bytes); at most the host's body limit */
  body: Uint8Array;
}

export interface VideoWebhookResult {
  /** false: not genuine (bad signature, unknown token): answered 401, ignored */
  accepted: boolean;
  /** handles of jobs whose state changed: polled at once, wherever they run */
  wake?: string[];
}

/* ---------------------------------------------------------------- instance */

export interface ModelInstance {
  chat?: ChatCapability;
  /** optional, with `chat`: Anthropic's Messages API served natively (see MessagesCapability) */
  messages?: MessagesCapability;
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
