/**
 * local-embeddings: Universal Sentence Encoder lite (512 dims) run in process with TensorFlow.js,
 * on tfjs-node's native backend when it is installed, else the wasm backend. Weights, vocabulary
 * and wasm are embedded in the build (see embedded-assets.ts), or read from `modelDir`.
 *
 * Options (all optional; defaults and why in options.ts): `modelDir`, `backend` ("auto" | "wasm" |
 * "tensorflow"), `batchWindowMs`, `maxBatchSize`, `maxBatchTokens` and `maxQueuedTokens`
 * (micro-batching and its bound, micro-batcher.ts), `workers` (inference threads, each with its own
 * copy of the model; 0 runs it on the main thread).
 *
 * `create` is cheap; `load` (called by the host on the first request, or at start when preloaded)
 * starts the workers, loads the weights and runs a warm-up batch on each, so the first request
 * is not the one that compiles the kernels. The model reads at most 128 tokens of a sentence (its
 * graph clips there), so longer inputs are cut to 128 tokens before inference: same vectors,
 * bounded padding. Usage counts every token of the input.
 *
 * Empty strings are rejected (400, param "input"), as OpenAI does: they have no tokens, and the
 * model's sparse input has no row for them.
 */
import { definePlugin, PluginError, type EmbeddingsCapability, type ModelInstance, type PluginContext } from "@reelay/plugin-sdk";
import { MicroBatcher } from "./micro-batcher.ts";
import { loadVocabularySync } from "./vocabulary.ts";
import { LocalEmbeddingsOptions, parseOptions } from "./options.ts";
import { SentencePieceTokenizer } from "./tokenizer.ts";
import { InferencePool } from "./worker-pool.ts";
import { ThroughputMeter } from "./throughput-meter.ts";

export { MicroBatcher } from "./micro-batcher.ts";

/** the graph's ClipToMaxLength: tokens past this do not change the vector (measured: cosine 1.000000) */
export const MODEL_MAX_TOKENS = 128;
/** length buckets of the micro-batcher (tokens); a batch pads to its longest sentence */
const BUCKETS = [16, 32, 64, MODEL_MAX_TOKENS];

function create(ctx: PluginContext): ModelInstance {
  const options = parseOptions(ctx.options);
  // the tokenizer runs on this thread (token counts for holds, ids for the workers); its trie is
  // built in slices, as part of `load` (the host waits for the model before counting)
  let building: Promise<SentencePieceTokenizer> | undefined;
  const tokenizer = () => (building ??= SentencePieceTokenizer.build(loadVocabularySync(options.modelDir)));
  // countTokens runs right before embed on the same array (the host counts for the hold first):
  // keep what it found so a request is tokenized once
  const counted = new WeakMap<string[], Promise<Tokenized[]>>();
  const tokenize = (inputs: string[]) => {
    let t = counted.get(inputs);
    if (!t) counted.set(inputs, (t = tokenizer().then((tk) => tokenizeSliced(inputs, tk))));
    return t;
  };
  let loaded: { engine: Engine; batcher: MicroBatcher<number[], Float32Array> } | undefined;
  const meter = new ThroughputMeter();

  const embeddings: EmbeddingsCapability = {
    supportsDimensions: false,
    maxInputs: 2048,
    // no text longer than this can be within the 8,192-token limit (a token covers at most 16
    // code points, a code point at most 2 UTF-16 units): refused before any tokenizing
    maxInputChars: MAX_INPUT_TOKENS * LONGEST_PIECE * 2,
    countTokens: async (inputs) => (await tokenize(inputs)).map((t) => t.count),
    async embed(req, { signal }) {
      if (!loaded) throw new Error("local-embeddings: embed before load");
      const tokenized = await tokenize(req.inputs);
      const empty = tokenized.findIndex((t) => t.count === 0);
      if (empty >= 0) {
        throw new PluginError("invalid_request", `input[${empty}] is empty; embeddings need at least one character`, { param: "input" });
      }
      const clipped = tokenized.map((t) => t.ids);
      const vectors = await loaded.batcher.submit(clipped, clipped.map((ids) => ids.length), signal);
      const tokens = tokenized.reduce((n, t) => n + t.count, 0);
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
      const [engine] = await Promise.all([options.workers > 0 ? workerEngine(options) : inProcessEngine(options), tokenizer()]);
      const batcher = new MicroBatcher<number[], Float32Array>(
        async (batch) => {
          const t0 = performance.now();
          const out = await engine.embed(batch);
          meter.record(batch.reduce((n, ids) => n + ids.length, 0), performance.now() - t0);
          return out;
        },
        {
          windowMs: options.batchWindowMs,
          maxBatchSize: options.maxBatchSize,
          maxBatchTokens: options.maxBatchTokens,
          maxQueuedTokens: options.maxQueuedTokens,
          parallel: Math.max(1, options.workers),
          buckets: BUCKETS,
          overloaded: (queued) =>
            new PluginError("overloaded", `the local embeddings model is at capacity (${queued} tokens waiting); retry shortly`, {
              retryAfterSeconds: meter.secondsFor(queued, Math.max(1, options.workers)),
            }),
        },
      );
      loaded = { engine, batcher };
      ctx.logger.info("local embeddings model loaded", { backend: engine.backend, workers: options.workers, ms: Math.round(performance.now() - started) });
    },
    // the host calls this after REELAY_MODEL_IDLE_SECONDS without a request (never with one in flight)
    unload() {
      loaded?.batcher.close();
      loaded?.engine.close();
      loaded = undefined;
    },
    close() {
      loaded?.batcher.close();
      loaded?.engine.close();
      loaded = undefined;
    },
  };
}

/** an input's token count and the ids the model reads (its first MODEL_MAX_TOKENS) */
interface Tokenized {
  count: number;
  ids: number[];
}

/** OpenAI's per-input limit, which the host applies to this model too */
const MAX_INPUT_TOKENS = 8_192;
/** the longest piece of USE-lite's vocabulary, in code points (checked by the plugin's tests) */
export const LONGEST_PIECE = 16;

/**
 * SentencePiece on this thread runs at ~1–1.5 MB/s, so inputs are tokenized in slices of ~4 ms
 * with the event loop free in between — within one input too (the longest allowed input, 262,144
 * characters, is ~0.2 s of lattice work).
 */
async function tokenizeSliced(inputs: string[], tokenizer: SentencePieceTokenizer): Promise<Tokenized[]> {
  const out: Tokenized[] = [];
  let sliceStart = performance.now();
  for (const text of inputs) {
    if (text.length > LONG_INPUT_CHARS) {
      out.push(await tokenizer.encodeSliced(text, 4, MODEL_MAX_TOKENS));
      sliceStart = performance.now();
      continue;
    }
    const ids = tokenizer.encode(text);
    out.push({ count: ids.length, ids: ids.length > MODEL_MAX_TOKENS ? ids.slice(0, MODEL_MAX_TOKENS) : ids });
    if (performance.now() - sliceStart > 4) {
      await new Promise((r) => setImmediate(r));
      sliceStart = performance.now();
    }
  }
  return out;
}

/** inputs longer than this are tokenized in slices of their own (~1 ms of work each) */
const LONG_INPUT_CHARS = 2_000;

interface Engine {
  backend: string;
  embed(batch: number[][]): Promise<Float32Array[]>;
  close(): void;
}

async function workerEngine(options: LocalEmbeddingsOptions): Promise<Engine> {
  const pool = await InferencePool.start(options.workers, { modelDir: options.modelDir, backend: options.backend, warmUp: warmUpBatch(options) });
  return { backend: pool.backend, embed: (b) => pool.embed(b), close: () => pool.close() };
}

async function inProcessEngine(options: LocalEmbeddingsOptions): Promise<Engine> {
  // TF.js is imported only here (workers: 0); with workers the main thread never evaluates it
  const { loadUseLiteEncoder } = await import("./use-lite-encoder.ts");
  const encoder = await loadUseLiteEncoder({ modelDir: options.modelDir, backend: options.backend });
  await encoder.embedTokens(warmUpBatch(options));
  return { backend: encoder.backend, embed: (b) => encoder.embedTokens(b), close: () => encoder.dispose() };
}

/**
 * A full batch of short sentences: the first pass compiles the kernels (the first call took ~10×
 * a warm one) and grows the WASM heap, before the model is reported ready.
 */
function warmUpBatch(options: LocalEmbeddingsOptions): number[][] {
  const rows = Math.max(1, Math.min(options.maxBatchSize, Math.floor(options.maxBatchTokens / 16)));
  return Array.from({ length: rows }, (_, r) => Array.from({ length: 16 }, (_, i) => 100 + ((r * 16 + i) % 7000)));
}

export default definePlugin({
  name: "local-embeddings",
  options: LocalEmbeddingsOptions,
  models: [{ id: "use-lite", pricing: { inputPerMillion: 20_000 }, ownedBy: "reelay" }],
  create,
});
