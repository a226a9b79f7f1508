/** Per-model options of local-embeddings: a schema the host validates at boot; defaults chosen by measurement. */
import { Type, type Static } from "@reelay/plugin-sdk";

/** Chosen by measurement (bench/embeddings.ts; docs/providers.md "Embeddings"). */
export const DEFAULTS = {
  backend: "auto" as const,
  batchWindowMs: 3,
  maxBatchSize: 32,
  maxBatchTokens: 2048,
  // one full request (2,048 inputs × the model's 128-token window) always fits in an empty queue;
  // past this much backlog (~2 minutes of work on 2 cores) new requests get 503 instead of waiting
  maxQueuedTokens: 262_144,
  workers: 2,
};

const int = (minimum: number, maximum: number, fallback: number, description: string) => Type.Integer({ minimum, maximum, default: fallback, description });

export const LocalEmbeddingsOptions = Type.Object({
  /** directory with model.json, its weight shards and vocab.json (default: the embedded files) */
  modelDir: Type.Optional(Type.String({ minLength: 1 })),
  backend: Type.Union([Type.Literal("auto"), Type.Literal("wasm"), Type.Literal("tensorflow")], { default: DEFAULTS.backend }),
  batchWindowMs: Type.Number({ minimum: 0, maximum: 1000, default: DEFAULTS.batchWindowMs, description: "how long the first sentence of a batch waits for company, ms" }),
  maxBatchSize: int(1, 1024, DEFAULTS.maxBatchSize, "sentences per batch at most"),
  maxBatchTokens: int(128, 65_536, DEFAULTS.maxBatchTokens, "padded tokens per batch at most (sentences × the longest one)"),
  maxQueuedTokens: int(1, 100_000_000, DEFAULTS.maxQueuedTokens, "tokens waiting for a worker at most; beyond, 503 + Retry-After"),
  workers: int(0, 16, DEFAULTS.workers, "inference threads, each with its own copy of the model; 0: on the main thread"),
}, { additionalProperties: false });

export type LocalEmbeddingsOptions = Static<typeof LocalEmbeddingsOptions>;

/** The host fills defaults in; this does too, for code that creates the plugin directly (tests, benchmarks). */
export function parseOptions(options: Record<string, unknown>): LocalEmbeddingsOptions {
  return { ...DEFAULTS, ...(Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<LocalEmbeddingsOptions>) };
}
