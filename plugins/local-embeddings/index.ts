/**
 * local-embeddings: Universal Sentence Encoder lite (512 dims) run in process with TensorFlow.js,
 * on tfjs-node's native backend when it is installed, else the wasm backend. Weights, vocabulary
 * and wasm are embedded in the build (see embedded-assets.ts), or read from `modelDir`.
 *
 * Options (all optional):
 * - `modelDir`: directory with model.json, its weight shards and vocab.json
 * - `backend`: "auto" (default) | "wasm" | "tensorflow"
 * - `batchWindowMs` (default 3) and `maxBatchSize` (default 32): micro-batching, see micro-batcher.ts
 * - `workers` (default 2): inference threads, each with its own copy of the model (≈ 170 MB, more
 *   while a batch runs); 0 runs the model on the main thread
 *
 * Empty strings are rejected (400, param "input"), as OpenAI does: they have no tokens, and the
 * model's sparse input has no row for them.
 */
import { PLUGIN_API_VERSION, PluginError, type EmbeddingsCapability, type PluginContext, type ReelayPlugin } from "../../src/plugin-sdk/index.ts";
import { MicroBatcher } from "./micro-batcher.ts";
import type { BackendChoice } from "./tf-backend.ts";
import { loadUseLiteEncoder } from "./use-lite-encoder.ts";
import { loadVocabulary, resolveModelFiles } from "./load-model.ts";
import { SentencePieceTokenizer } from "./tokenizer.ts";
import { InferencePool } from "./worker-pool.ts";

export { loadUseLiteEncoder, UseLiteEncoder, USE_LITE_DIMENSIONS } from "./use-lite-encoder.ts";
export { MicroBatcher } from "./micro-batcher.ts";

const BACKENDS: BackendChoice[] = ["auto", "wasm", "tensorflow"];
const DEFAULTS = { batchWindowMs: 3, maxBatchSize: 32, workers: 2 };

export interface LocalEmbeddingsOptions {
  modelDir?: string;
  backend?: BackendChoice;
  batchWindowMs?: number;
  maxBatchSize?: number;
  workers?: number;
}

function validateOptions(options: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const { modelDir, backend, batchWindowMs, maxBatchSize, workers } = options;
  if (workers !== undefined && !(Number.isInteger(workers) && (workers as number) >= 0 && (workers as number) <= 16)) problems.push("workers: must be an integer from 0 to 16");
  if (modelDir !== undefined && (typeof modelDir !== "string" || modelDir === "")) problems.push("modelDir: must be a non-empty path");
  if (backend !== undefined && !BACKENDS.includes(backend as BackendChoice)) problems.push(`backend: must be one of ${BACKENDS.join(", ")}`);
  if (batchWindowMs !== undefined && !(typeof batchWindowMs === "number" && batchWindowMs >= 0 && batchWindowMs <= 1000)) {
    problems.push("batchWindowMs: must be a number from 0 to 1000");
  }
  if (maxBatchSize !== undefined && !(Number.isInteger(maxBatchSize) && (maxBatchSize as number) >= 1 && (maxBatchSize as number) <= 1024)) {
    problems.push("maxBatchSize: must be an integer from 1 to 1024");
  }
  return problems;
}

async function create(ctx: PluginContext) {
  const problems = validateOptions(ctx.options);
  if (problems.length > 0) throw new Error(`local-embeddings options: ${problems.join("; ")}`);
  const options = ctx.options as LocalEmbeddingsOptions;

  const started = performance.now();
  const workers = options.workers ?? DEFAULTS.workers;
  const engine = workers > 0 ? await workerEngine(workers, options) : await inProcessEngine(options);
  ctx.logger.info("local embeddings model loaded", {
    backend: engine.backend,
    workers,
    ms: Math.round(performance.now() - started),
  });

  const batcher = new MicroBatcher<number[], Float32Array>((batch) => engine.embed(batch), {
    windowMs: options.batchWindowMs ?? DEFAULTS.batchWindowMs,
    maxBatchSize: options.maxBatchSize ?? DEFAULTS.maxBatchSize,
    parallel: Math.max(1, workers),
  });
  const tokenizer = engine.tokenizer;

  const embeddings: EmbeddingsCapability = {
    supportsDimensions: false,
    maxInputs: 2048,
    maxInputChars: 20_000,
    countTokens: (inputs) => inputs.map((t) => tokenizer.encode(t).length),
    async embed(req, { signal }) {
      const tokenized = req.inputs.map((text) => tokenizer.encode(text));
      const empty = tokenized.findIndex((ids) => ids.length === 0);
      if (empty >= 0) {
        throw new PluginError("invalid_request", `input[${empty}] is empty; embeddings need at least one character`, { param: "input" });
      }
      const vectors = await batcher.submit(tokenized, signal);
      const tokens = tokenized.reduce((n, ids) => n + ids.length, 0);
      return {
        data: vectors.map((embedding, index) => ({ index, embedding })),
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      };
    },
  };

  return {
    embeddings,
    close() {
      batcher.close();
      engine.close();
    },
  };
}

interface Engine {
  backend: string;
  tokenizer: SentencePieceTokenizer;
  embed(batch: number[][]): Promise<Float32Array[]>;
  close(): void;
}

async function workerEngine(workers: number, options: LocalEmbeddingsOptions): Promise<Engine> {
  const [pool, vocabulary] = await Promise.all([
    InferencePool.start(workers, { modelDir: options.modelDir, backend: options.backend }),
    resolveModelFiles(options.modelDir).then(loadVocabulary),
  ]);
  return { backend: pool.backend, tokenizer: new SentencePieceTokenizer(vocabulary), embed: (b) => pool.embed(b), close: () => pool.close() };
}

async function inProcessEngine(options: LocalEmbeddingsOptions): Promise<Engine> {
  const encoder = await loadUseLiteEncoder({ modelDir: options.modelDir, backend: options.backend });
  return { backend: encoder.backend, tokenizer: encoder.tokenizer, embed: (b) => encoder.embedTokens(b), close: () => encoder.dispose() };
}

export default {
  name: "local-embeddings",
  apiVersion: PLUGIN_API_VERSION,
  models: [{ id: "use-lite", pricing: { inputPerMillion: 20_000 }, ownedBy: "reelay" }],
  validateOptions,
  create,
} satisfies ReelayPlugin;
