/** Per-model options of the local-llm plugin: validation (boot) and parsing with defaults. */
import { existsSync, statSync } from "node:fs";
import { availableParallelism } from "node:os";

export type PromptFormat = "auto" | "template" | "plain";

export interface LocalLlmOptions {
  /** a GGUF file; undefined = the embedded stories260K model */
  modelPath?: string;
  /** tokens of context per sequence (prompt + answer); undefined = the model's training context, at most 4096 */
  contextSize?: number;
  /** requests decoded at once, each on its own context sequence */
  parallel: number;
  /** requests waiting for a free sequence; one more gets 503 + Retry-After */
  maxQueue: number;
  /** CPU threads per decode step */
  threads: number;
  /** "auto": the GGUF's chat template when it has one, else plain text */
  promptFormat: PromptFormat;
}

const KNOWN = new Set(["modelPath", "contextSize", "parallel", "maxQueue", "threads", "promptFormat"]);
const FORMATS: PromptFormat[] = ["auto", "template", "plain"];
const INT_RANGES = { contextSize: [64, 1_048_576], parallel: [1, 64], maxQueue: [0, 100_000], threads: [1, 256] } as const;

/**
 * llama.cpp spins its worker threads while decoding: more threads than free physical cores makes
 * every step wait for the slowest one (on a 2-core machine shared with other work, threads unset
 * fell to ~1 token/s for stories260K, against ~1,000 with one thread). Half the logical CPUs
 * (≈ the physical cores), 1 to 8.
 */
export function defaultThreads(): number {
  return Math.max(1, Math.min(8, Math.floor(availableParallelism() / 2)));
}

export function validateOptions(o: Record<string, unknown>): string[] {
  const problems: string[] = [];
  for (const key of Object.keys(o)) if (!KNOWN.has(key)) problems.push(`unknown option "${key}" (known: ${[...KNOWN].join(", ")})`);
  if (o.modelPath !== undefined) {
    if (typeof o.modelPath !== "string" || o.modelPath === "") problems.push(`"modelPath" must be the path of a .gguf file`);
    else if (!existsSync(o.modelPath) || !statSync(o.modelPath).isFile()) problems.push(`"modelPath": no file at ${o.modelPath}`);
  }
  for (const [key, [lo, hi]] of Object.entries(INT_RANGES)) {
    const v = o[key];
    if (v !== undefined && !(Number.isInteger(v) && (v as number) >= lo && (v as number) <= hi)) problems.push(`"${key}" must be an integer from ${lo} to ${hi}`);
  }
  if (o.promptFormat !== undefined && !FORMATS.includes(o.promptFormat as PromptFormat)) problems.push(`"promptFormat" must be one of ${FORMATS.join(", ")}`);
  return problems;
}

/** Assumes validateOptions found no problems. */
export function parseOptions(o: Record<string, unknown>): LocalLlmOptions {
  return {
    modelPath: o.modelPath as string | undefined,
    contextSize: o.contextSize as number | undefined,
    parallel: (o.parallel as number | undefined) ?? 2,
    maxQueue: (o.maxQueue as number | undefined) ?? 32,
    threads: (o.threads as number | undefined) ?? defaultThreads(),
    promptFormat: (o.promptFormat as PromptFormat | undefined) ?? "auto",
  };
}
