import { readFileSync } from "node:fs";
import { join } from "node:path";
import { embeddedModelFiles } from "./embedded-assets.ts";
import type { Vocabulary } from "./tokenizer.ts";

/**
 * Only the vocabulary (the main thread tokenizes; workers hold the model): vocab.json of
 * `modelDir`, else the embedded one. Kept apart from load-model.ts so the main thread never
 * evaluates TF.js.
 */
export function loadVocabularySync(modelDir?: string): Vocabulary {
  return JSON.parse(readFileSync(modelDir ? join(modelDir, "vocab.json") : embeddedModelFiles.vocabJson, "utf8")) as Vocabulary;
}
