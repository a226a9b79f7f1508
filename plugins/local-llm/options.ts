/** Per-model options of the local-llm plugin: a schema the host validates at boot, plus the file check. */
import { existsSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";
import { Type, type Static } from "@reelay/plugin-sdk";

export const LocalLlmOptions = Type.Object({
  /** a GGUF file; unset = the embedded stories260K model */
  modelPath: Type.Optional(Type.String({ minLength: 1, description: "the path of a .gguf file" })),
  /** tokens of context per sequence (prompt + answer); unset = the model's training context, at most 4096 */
  contextSize: Type.Optional(Type.Integer({ minimum: 64, maximum: 1_048_576 })),
  /** requests decoded at once, each on its own context sequence */
  parallel: Type.Integer({ minimum: 1, maximum: 64, default: 2 }),
  /** requests waiting for a free sequence; one more gets 503 + Retry-After */
  maxQueue: Type.Integer({ minimum: 0, maximum: 100_000, default: 32 }),
  /** CPU threads per decode step; unset = defaultThreads() */
  threads: Type.Optional(Type.Integer({ minimum: 1, maximum: 256 })),
  /** "auto": the GGUF's chat template when it has one, else plain text */
  promptFormat: Type.Union([Type.Literal("auto"), Type.Literal("template"), Type.Literal("plain")], { default: "auto" }),
}, { additionalProperties: false });

export type LocalLlmOptions = Static<typeof LocalLlmOptions> & { threads: number };
export type PromptFormat = LocalLlmOptions["promptFormat"];

/**
 * llama.cpp spins its worker threads while decoding: more threads than free physical cores makes
 * every step wait for the slowest one (on a 2-core machine shared with other work, threads unset
 * fell to ~1 token/s for stories260K, against ~1,000 with one thread). Half the logical CPUs
 * (≈ the physical cores), 1 to 8.
 */
export function defaultThreads(): number {
  return Math.max(1, Math.min(8, Math.floor(availableParallelism() / 2)));
}

/** What the schema cannot check: the model file exists. */
export function validateOptions(o: Static<typeof LocalLlmOptions>): string[] {
  if (typeof o.modelPath === "string" && !(existsSync(o.modelPath) && statSync(o.modelPath).isFile())) return [`option "modelPath": no file at ${o.modelPath}`];
  return [];
}

export function parseOptions(o: Static<typeof LocalLlmOptions>): LocalLlmOptions {
  return { ...o, threads: o.threads ?? defaultThreads() };
}
