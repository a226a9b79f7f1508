/**
 * reelay's own token counter (cl100k_base via js-tiktoken), used when an upstream reports no usage
 * and to estimate prompt tokens for holds. Upstream models tokenize differently (typically within
 * ±15% on English), so counts made here are recorded as `token_source: "local"`.
 */
import { Tiktoken } from "js-tiktoken/lite";
import cl100k_base from "js-tiktoken/ranks/cl100k_base";

// Built once: parsing the rank table takes ~100 ms.
const cl100k = new Tiktoken(cl100k_base);

export function countTextTokens(text: string): number {
  return text ? cl100k.encode(text).length : 0;
}
