import * as tf from "@tensorflow/tfjs-core";
import { loadGraphModel, type GraphModel } from "@tensorflow/tfjs-converter";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { embeddedModelFiles, type ModelFiles } from "./embedded-assets.ts";
import type { Vocabulary } from "./tokenizer.ts";

/** the files of a USE-lite TF.js export in `dir` (model.json, its shards, vocab.json) */
export async function modelFilesInDir(dir: string): Promise<ModelFiles> {
  const modelJson = join(dir, "model.json");
  const manifest = (await Bun.file(modelJson).json()) as tf.io.ModelJSON;
  const shards: Record<string, string> = {};
  for (const group of manifest.weightsManifest) for (const name of group.paths) shards[name] = join(dir, name);
  return { modelJson, vocabJson: join(dir, "vocab.json"), shards };
}

export function resolveModelFiles(modelDir?: string): Promise<ModelFiles> {
  return modelDir ? modelFilesInDir(modelDir) : Promise.resolve(embeddedModelFiles);
}

/** An IOHandler reading model.json and its shards from disk: no fetch, no file:// URLs. */
function diskIOHandler(files: ModelFiles): tf.io.IOHandler {
  return {
    async load() {
      const json = (await Bun.file(files.modelJson).json()) as tf.io.ModelJSON;
      const weightSpecs: tf.io.WeightsManifestEntry[] = [];
      const buffers: ArrayBuffer[] = [];
      for (const group of json.weightsManifest) {
        weightSpecs.push(...group.weights);
        for (const name of group.paths) {
          const path = files.shards[name];
          if (!path) throw new Error(`model shard ${name} not found`);
          buffers.push(await Bun.file(path).arrayBuffer());
        }
      }
      return {
        modelTopology: json.modelTopology,
        format: json.format,
        generatedBy: json.generatedBy,
        convertedBy: json.convertedBy,
        signature: json.signature,
        userDefinedMetadata: json.userDefinedMetadata,
        weightSpecs,
        weightData: concat(buffers),
      };
    },
  };
}

function concat(buffers: ArrayBuffer[]): ArrayBuffer {
  const out = new Uint8Array(buffers.reduce((n, b) => n + b.byteLength, 0));
  let offset = 0;
  for (const b of buffers) {
    out.set(new Uint8Array(b), offset);
    offset += b.byteLength;
  }
  return out.buffer;
}

export async function loadModelAndVocabulary(files: ModelFiles): Promise<{ model: GraphModel; vocabulary: Vocabulary }> {
  const [model, vocabulary] = await Promise.all([
    loadGraphModel(diskIOHandler(files)),
    Bun.file(files.vocabJson).json() as Promise<Vocabulary>,
  ]);
  return { model, vocabulary };
}

/** only the vocabulary (the main thread tokenizes; workers hold the model): vocab.json of `modelDir`, else the embedded one */
export function loadVocabularySync(modelDir?: string): Vocabulary {
  return JSON.parse(readFileSync(modelDir ? join(modelDir, "vocab.json") : embeddedModelFiles.vocabJson, "utf8")) as Vocabulary;
}
