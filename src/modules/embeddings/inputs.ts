/**
 * `input` → what the plugin gets, with reelay's limits. The schema has already checked the types;
 * here: emptiness, count and length.
 */
import { badRequest } from "../../errors.ts";

export type NormalizedInput = { kind: "text"; texts: string[] } | { kind: "tokens"; arrays: number[][] };

export interface InputLimits {
  maxInputs: number;
  maxInputChars: number;
  maxTotalChars: number;
}

/** OpenAI's own per-request cap on the number of inputs; used when a plugin states none. */
export const DEFAULT_MAX_INPUTS = 2048;
/**
 * Per-request total. Counting tokens for the hold (and, for the local model, tokenizing) runs on
 * the event loop: ~50-100 ms per 200k characters measured here (cl100k and USE-lite's
 * SentencePiece alike), so a larger request would stall every other request for longer.
 */
export const MAX_TOTAL_CHARS = 200_000;

export function normalizeInput(input: string | string[] | number[] | number[][], limits: InputLimits): NormalizedInput {
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
  let total = 0;
  for (const [i, text] of texts.entries()) {
    if (text.length === 0) throw badRequest(`'input[${i}]' is an empty string; embeddings need at least one character.`, "input", "invalid_input");
    if (text.length > limits.maxInputChars) {
      throw badRequest(`'input[${i}]' has ${text.length} characters; this model takes at most ${limits.maxInputChars} per input.`, "input", "input_too_long");
    }
    total += text.length;
  }
  if (total > limits.maxTotalChars) {
    throw badRequest(`'input' has ${total} characters in all; at most ${limits.maxTotalChars} per request. Split it into several requests.`, "input", "input_too_long");
  }
  return { kind: "text", texts };
}
