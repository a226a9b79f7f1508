/**
 * `input` → what the plugin gets, with OpenAI's limits (what LangChain's embedDocuments, the AI
 * SDK's embedMany and LlamaIndex send in one batch): at most 2,048 inputs, 8,192 tokens per input
 * and 300,000 tokens per request, counted in tokens rather than characters, for local and
 * pass-through models alike. The schema has already checked the types; here: emptiness, count,
 * then tokens.
 *
 * Counting runs on the event loop (the model's own tokenizer, else cl100k): measured here 1.5 MB/s
 * for USE-lite's SentencePiece and 4.3 MB/s for cl100k, so a full 300k-token request takes
 * ~0.3–1 s. It is counted in slices of at most ~4 ms with the event loop free in between, so other
 * requests keep being served while a big one is counted.
 */
import { badRequest } from "../../errors.ts";
import type { EmbeddingsCapability } from "../../plugin-sdk/index.ts";
import { countTextTokens } from "../../text/tokens.ts";

export type NormalizedInput = { kind: "text"; texts: string[] } | { kind: "tokens"; arrays: number[][] };

export interface InputLimits {
  maxInputs: number;
  maxInputTokens: number;
  maxRequestTokens: number;
  /** a plugin's own per-input character cap, if it declares one */
  maxInputChars?: number;
}

/** OpenAI's embeddings limits, used unless the model's plugin states its own */
export const OPENAI_LIMITS: InputLimits = { maxInputs: 2048, maxInputTokens: 8192, maxRequestTokens: 300_000 };

/** the limits for one model: OpenAI's, tightened (never widened past the per-request budget) by what the plugin declares */
export function limitsFor(cap: Pick<EmbeddingsCapability, "maxInputs" | "maxInputTokens" | "maxInputChars">): InputLimits {
  return {
    maxInputs: Math.min(cap.maxInputs ?? OPENAI_LIMITS.maxInputs, OPENAI_LIMITS.maxInputs),
    maxInputTokens: Math.min(cap.maxInputTokens ?? OPENAI_LIMITS.maxInputTokens, OPENAI_LIMITS.maxRequestTokens),
    maxRequestTokens: OPENAI_LIMITS.maxRequestTokens,
    maxInputChars: cap.maxInputChars,
  };
}

export function normalizeInput(input: string | string[] | number[] | number[][], limits: Pick<InputLimits, "maxInputs" | "maxInputChars">): NormalizedInput {
  if (typeof input === "string") input = [input];
  if (input.length === 0) throw badRequest("'input' must not be an empty array.", "input", "invalid_input");
  if (input.every((x) => typeof x === "number")) input = [input as number[]];
  if (input.length > limits.maxInputs) {
    throw badRequest(`'input' has ${input.length} items; this model takes at most ${limits.maxInputs} per request.`, "input", "too_many_inputs");
  }
  if (input.every((x) => Array.isArray(x))) {
    const arrays = input as number[][];
    const empty = arrays.findIndex((a) => a.length === 0);
    if (empty >= 0) throw badRequest(`'input[${empty}]' is an empty token array.`, "input", "invalid_input");
    return { kind: "tokens", arrays };
  }
  const texts = input as string[];
  for (const [i, text] of texts.entries()) {
    if (text.length === 0) throw badRequest(`'input[${i}]' is an empty string; embeddings need at least one character.`, "input", "invalid_input");
    if (limits.maxInputChars !== undefined && text.length > limits.maxInputChars) {
      throw badRequest(`'input[${i}]' has ${text.length} characters; this model takes at most ${limits.maxInputChars} per input.`, "input", "input_too_long");
    }
  }
  return { kind: "text", texts };
}

/** a slice of counting work may hold the event loop this long before it yields */
const SLICE_MS = 4;

/**
 * Tokens of each input (the model's own count when it has one, else cl100k), checked against the
 * per-input and per-request limits: 400 `input_too_long` naming the input or the total.
 */
export async function countInputTokens(cap: Pick<EmbeddingsCapability, "countTokens">, input: NormalizedInput, limits: InputLimits): Promise<number[]> {
  let counts: number[];
  if (input.kind === "tokens") counts = input.arrays.map((a) => a.length);
  else if (cap.countTokens) counts = await cap.countTokens(input.texts);
  else counts = await countSliced(input.texts, limits);
  let total = 0;
  for (const [i, n] of counts.entries()) {
    if (n > limits.maxInputTokens) {
      throw badRequest(`'input[${i}]' is longer than this model's limit of ${limits.maxInputTokens} tokens per input.`, "input", "input_too_long");
    }
    total += n;
  }
  if (total > limits.maxRequestTokens) {
    throw badRequest(`'input' is longer than the limit of ${limits.maxRequestTokens} tokens per request (all inputs together). Split it into several requests.`, "input", "input_too_long");
  }
  return counts;
}

/**
 * cl100k counts, yielding the event loop every SLICE_MS. Each count stops one token past what
 * could still pass (the input's limit or what is left of the request's budget), so an oversized
 * request costs no more counting than a full legal one.
 */
async function countSliced(texts: string[], limits: InputLimits): Promise<number[]> {
  const counts: number[] = [];
  let total = 0;
  let sliceStart = performance.now();
  for (const text of texts) {
    const n = countTextTokens(text, Math.min(limits.maxInputTokens, limits.maxRequestTokens - total) + 1);
    counts.push(n);
    total += n;
    if (n > limits.maxInputTokens || total > limits.maxRequestTokens) return counts.concat(texts.slice(counts.length).map(() => 0));
    if (performance.now() - sliceStart > SLICE_MS) {
      await new Promise((r) => setImmediate(r));
      sliceStart = performance.now();
    }
  }
  return counts;
}
