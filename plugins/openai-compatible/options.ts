/** Per-model options of the openai-compatible plugin, as a schema the host validates at boot. */
import { DEFAULT_UPSTREAM_TIMEOUTS, Type, type Static } from "@reelay/plugin-sdk";

const ms = (description: string, fallback: number) => Type.Integer({ minimum: 1, maximum: 86_400_000, default: fallback, description });

export const Timeouts = Type.Object({
  /**
   * Streamed calls: request start → response headers. Covers DNS, TCP, TLS and the upstream
   * accepting the request (vLLM, OpenAI and llama.cpp send stream headers before generating).
   * Servers that hold the headers until the first token (Ollama under load) need a larger value.
   */
  connectMs: ms("streamed calls: request start to response headers", DEFAULT_UPSTREAM_TIMEOUTS.connectMs),
  /** Streamed calls: response headers → first body byte (queueing + prefill, i.e. time to first token). */
  firstByteMs: ms("streamed calls: headers to the first body byte", DEFAULT_UPSTREAM_TIMEOUTS.firstByteMs),
  /** Gap between two body chunks, both calls. */
  idleMs: ms("gap between two body chunks", DEFAULT_UPSTREAM_TIMEOUTS.idleMs),
  /** The whole call, body included (a non-streamed upstream sends headers only when done). */
  totalMs: ms("the whole call", DEFAULT_UPSTREAM_TIMEOUTS.totalMs),
}, { additionalProperties: false, default: {} });

/**
 * maxResponseBytes: the largest non-streamed answer read; beyond it the call fails (502) and the
 * hold is released (a 200 MB upstream answer raised reelay's RSS by 389 MiB before this cap
 * existed). Default 16 MiB for chat (128 choices × 32k tokens of text is ~16 MB) and 128 MiB for
 * embeddings (2,048 inputs × 3,072 dimensions as JSON floats is ~125 MB). maxEventBytes: the
 * largest single streamed event (default 1 MiB; a chat chunk is well under 10 KB).
 */
export const Limits = Type.Object({
  maxResponseBytes: Type.Optional(Type.Integer({ minimum: 1024 })),
  maxEventBytes: Type.Integer({ minimum: 1024, default: 1024 * 1024 }),
}, { additionalProperties: false, default: {} });

export const OpenAICompatibleOptions = Type.Object({
  /** includes the /v1 part, like the OpenAI SDK's baseURL */
  baseUrl: Type.String({ pattern: "^https?://[^?#]+$", description: 'the upstream, e.g. "http://localhost:8000/v1" (http or https, no query)' }),
  /** the name of the environment variable holding the API key, never the key itself */
  apiKeyEnv: Type.Optional(Type.String({ pattern: "^[A-Za-z_][A-Za-z0-9_]*$", description: "an environment variable name" })),
  /** the model name the upstream knows; default: the model's id */
  upstreamModel: Type.Optional(Type.String({ minLength: 1 })),
  timeouts: Timeouts,
  /** ask for vLLM's per-chunk usage, so an abandoned stream is billed in the model's own tokens */
  continuousUsageStats: Type.Boolean({ default: false }),
  capabilities: Type.Array(Type.Union([Type.Literal("chat"), Type.Literal("embeddings")]), { minItems: 1, uniqueItems: true, default: ["chat"] }),
  limits: Limits,
}, { additionalProperties: false });

export type OpenAICompatibleOptions = Static<typeof OpenAICompatibleOptions>;
export type Timeouts = Static<typeof Timeouts>;

export const DEFAULT_MAX_RESPONSE_BYTES = { chat: 16 * 1024 * 1024, embeddings: 128 * 1024 * 1024 } as const;

/** What the schema cannot say: the base URL must parse. */
export function validateOptions(o: OpenAICompatibleOptions): string[] {
  try {
    new URL(o.baseUrl);
    return [];
  } catch {
    return [`option "baseUrl": not a valid URL: ${o.baseUrl}`];
  }
}
