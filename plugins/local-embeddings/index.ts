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
import { PLUGIN_API_VERSION, PluginError, type EmbeddingsCapability, type ModelInstance, type PluginContext, type ReelayPlugin } from "../../src/plugin-sdk/index.ts";
import { MicroBatcher } from "./micro-batcher.ts";
import type { BackendChoice } from "./tf-backend.ts";
import { loadUseLiteEncoder } from "./use-lite-encoder.ts";
import { loadVocabularySync } from "./load-model.ts";
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

/**
 * Cheap: options and the lazily read vocabulary only. The workers and weights come in `load`
 * (run by the host on the first request, or at start when preloaded), so the server listens at
 * once and an unused model costs no memory.
 */
function create(ctx: PluginContext): ModelInstance {
  const problems = validateOptions(ctx.options);
  if (problems.length > 0) throw new Error(`local-embeddings options: ${problems.join("; ")}`);
  const options = ctx.options as LocalEmbeddingsOptions;
  const workers = options.workers ?? DEFAULTS.workers;
  // the tokenizer runs on this thread (token counts for holds, ids for the workers); its vocabulary
  // is 0.2 MB of JSON, read on first use
  let tokenizer: SentencePieceTokenizer | undefined;
  const tokenize = () => (tokenizer ??= new SentencePieceTokenizer(loadVocabularySync(options.modelDir)));
  let loaded: { engine: Engine; batcher: MicroBatcher<number[], Float32Array> } | undefined;

  const embeddings: EmbeddingsCapability = {
    supportsDimensions: false,
    maxInputs: 2048,
    maxInputChars: 20_000,
    countTokens: (inputs) => inputs.map((t) => tokenize().encode(t).length),
    async embed(req, { signal }) {
      if (!loaded) throw new Error("local-embeddings: embed before load");
      const tokenized = req.inputs.map((text) => tokenize().encode(text));
      const empty = tokenized.findIndex((ids) => ids.length === 0);
      if (empty >= 0) {
        throw new PluginError("invalid_request", `input[${empty}] is empty; embeddings need at least one character`, { param: "input" });
      }
      const vectors = await loaded.batcher.submit(tokenized, signal);
      const tokens = tokenized.reduce((n, ids) => n + ids.length, 0);
      return {
        data: vectors.map((embedding, index) => ({ index, embedding })),
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      };
    },
  };

  return {
    embeddings,
    async load() {
      const started = performance.now();
      const engine = workers > 0 ? await workerEngine(workers, options) : await inProcessEngine(options);
      const batcher = new MicroBatcher<number[], Float32Array>((batch) => engine.embed(batch), {
        windowMs: options.batchWindowMs ?? DEFAULTS.batchWindowMs,
        maxBatchSize: options.maxBatchSize ?? DEFAULTS.maxBatchSize,
        parallel: Math.max(1, workers),
      });
      loaded = { engine, batcher };
      ctx.logger.info("local embeddings model loaded", { backend: engine.backend, workers, ms: Math.round(performance.now() - started) });
    },
    close() {
      loaded?.batcher.close();
      loaded?.engine.close();
    },
  };
}

interface Engine {
  backend: string;
  embed(batch: number[][]): Promise<Float32Array[]>;
  close(): void;
}

async function workerEngine(workers: number, options: LocalEmbeddingsOptions): Promise<Engine> {
  const pool = await InferencePool.start(workers, { modelDir: options.modelDir, backend: options.backend });
  return { backend: pool.backend, embed: (b) => pool.embed(b), close: () => pool.close() };
}

async function inProcessEngine(options: LocalEmbeddingsOptions): Promise<Engine> {
  const encoder = await loadUseLiteEncoder({ modelDir: options.modelDir, backend: options.backend });
  return { backend: encoder.backend, embed: (b) => encoder.embedTokens(b), close: () => encoder.dispose() };
}

export default {
  name: "local-embeddings",
  apiVersion: PLUGIN_API_VERSION,
  models: [{ id: "use-lite", pricing: { inputPerMillion: 20_000 }, ownedBy: "reelay" }],
  validateOptions,
  create,
} satisfies ReelayPlugin;
