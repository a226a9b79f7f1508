import * as tf from "@tensorflow/tfjs-core";
import type { GraphModel } from "@tensorflow/tfjs-converter";
import { initBackend, type BackendChoice } from "./tf-backend.ts";
import { loadModelAndVocabulary, resolveModelFiles } from "./load-model.ts";
import { SentencePieceTokenizer } from "./tokenizer.ts";

export const USE_LITE_DIMENSIONS = 512;

export interface UseLiteEncoderOptions {
  /** directory with model.json, its shards and vocab.json; default: the files embedded in the build */
  modelDir?: string;
  backend?: BackendChoice;
}

/**
 * Universal Sentence Encoder lite, in process. One `embed` call is one forward pass of the whole
 * batch. The graph has a dynamic op (ClipToMaxLength/Where), so it must run with executeAsync; on
 * the wasm backend that still computes on this thread, only awaiting already-settled promises.
 */
export class UseLiteEncoder {
  readonly dimensions = USE_LITE_DIMENSIONS;

  constructor(
    readonly backend: string,
    private readonly model: GraphModel,
    readonly tokenizer: SentencePieceTokenizer,
  ) {}

  countTokens(texts: string[]): number[] {
    return texts.map((t) => this.tokenizer.encode(t).length);
  }

  /** every text must tokenize to at least one token (the graph has no row for an empty one) */
  async embedTokens(batch: number[][]): Promise<Float32Array[]> {
    if (batch.length === 0) return [];
    let total = 0;
    for (const ids of batch) {
      if (ids.length === 0) throw new Error("cannot embed a text with no tokens");
      total += ids.length;
    }
    // The graph takes a sparse [batch, tokens] matrix: `indices` rows are [sentence, position],
    // `values` the token ids in the same order.
    const indices = new Int32Array(total * 2);
    const values = new Int32Array(total);
    let k = 0;
    batch.forEach((ids, row) => {
      ids.forEach((id, pos) => {
        indices[2 * k] = row;
        indices[2 * k + 1] = pos;
        values[k++] = id;
      });
    });
    const inputs = { indices: tf.tensor2d(indices, [total, 2], "int32"), values: tf.tensor1d(values, "int32") };
    let flat: Float32Array;
    try {
      const out = (await this.model.executeAsync(inputs)) as tf.Tensor;
      flat = (await out.data()) as Float32Array;
      out.dispose();
    } finally {
      inputs.indices.dispose();
      inputs.values.dispose();
    }
    const vectors: Float32Array[] = [];
    for (let row = 0; row < batch.length; row++) {
      vectors.push(normalize(flat.slice(row * this.dimensions, (row + 1) * this.dimensions)));
    }
    return vectors;
  }

  embed(texts: string[]): Promise<Float32Array[]> {
    return this.embedTokens(texts.map((t) => this.tokenizer.encode(t)));
  }

  dispose(): void {
    this.model.dispose();
  }
}

/**
 * The USE-lite graph already L2-normalises its output (norms measured 1.000000 to 6 places). We
 * still divide by the norm, ~512 flops per vector, so a different model given via `modelDir`
 * cannot break the unit-length promise clients use to treat dot products as cosines.
 */
function normalize(v: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i] = v[i]! / norm;
  return v;
}

export async function loadUseLiteEncoder(opts: UseLiteEncoderOptions = {}): Promise<UseLiteEncoder> {
  const [backend, files] = await Promise.all([initBackend(opts.backend), resolveModelFiles(opts.modelDir)]);
  const { model, vocabulary } = await loadModelAndVocabulary(files);
  return new UseLiteEncoder(backend, model, new SentencePieceTokenizer(vocabulary));
}
