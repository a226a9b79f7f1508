import type { BackendChoice } from "./tf-backend.ts";

export interface LocalEmbeddingsOptions {
  /** directory with model.json, its weight shards and vocab.json (default: the embedded files) */
  modelDir?: string;
  backend: BackendChoice;
  /** how long the first sentence of a batch waits for company, ms */
  batchWindowMs: number;
  /** sentences per batch at most */
  maxBatchSize: number;
  /** padded tokens per batch at most (sentences × the longest one) */
  maxBatchTokens: number;
  /** tokens waiting for a worker at most; beyond, 503 + Retry-After */
  maxQueuedTokens: number;
  /** inference threads, each with its own copy of the model; 0: on the main thread */
  workers: number;
}

/** Chosen by measurement (bench/embeddings.ts; README "Embeddings"). */
export const DEFAULTS: Omit<LocalEmbeddingsOptions, "modelDir"> = {
  backend: "auto",
  batchWindowMs: 3,
  maxBatchSize: 32,
  maxBatchTokens: 2048,
  // one full request (2,048 inputs × the model's 128-token window) always fits in an empty queue;
  // past this much backlog (~2 minutes of work on 2 cores) new requests get 503 instead of waiting
  maxQueuedTokens: 262_144,
  workers: 2,
};

const BACKENDS: BackendChoice[] = ["auto", "wasm", "tensorflow"];
const INTEGER_RANGES = { maxBatchSize: [1, 1024], maxBatchTokens: [128, 65_536], maxQueuedTokens: [1, 100_000_000], workers: [0, 16] } as const;

export function problemsWithOptions(options: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const { modelDir, backend, batchWindowMs } = options;
  if (modelDir !== undefined && (typeof modelDir !== "string" || modelDir === "")) problems.push("modelDir: must be a non-empty path");
  if (backend !== undefined && !BACKENDS.includes(backend as BackendChoice)) problems.push(`backend: must be one of ${BACKENDS.join(", ")}`);
  if (batchWindowMs !== undefined && !(typeof batchWindowMs === "number" && batchWindowMs >= 0 && batchWindowMs <= 1000)) {
    problems.push("batchWindowMs: must be a number from 0 to 1000");
  }
  for (const [key, [lo, hi]] of Object.entries(INTEGER_RANGES)) {
    const v = options[key];
    if (v !== undefined && !(Number.isInteger(v) && (v as number) >= lo && (v as number) <= hi)) problems.push(`${key}: must be an integer from ${lo} to ${hi}`);
  }
  return problems;
}

export function parseOptions(options: Record<string, unknown>): LocalEmbeddingsOptions {
  const problems = problemsWithOptions(options);
  if (problems.length > 0) throw new Error(`local-embeddings options: ${problems.join("; ")}`);
  return { ...DEFAULTS, ...(Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Partial<LocalEmbeddingsOptions>) };
}
