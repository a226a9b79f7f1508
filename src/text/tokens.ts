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

/**
 * Prompt-token estimate of a chat `messages` array, for holds before the upstream reports usage
 * and for billing when it never does (a client that disconnects mid-stream).
 *
 * Formula (OpenAI cookbook, "How to count tokens with tiktoken", gpt-3.5/4 family):
 *   3 per message + tokens(role) + tokens(content text) + tokens(name) + 1 if name is present,
 *   + 3 for the priming of the reply.
 * Content parts count their `text`; images, audio and tool calls are not counted. Upstream models
 * (Llama, Qwen, Mistral…) tokenize differently, typically within ±15% of cl100k_base on English,
 * so this is an estimate; the bill uses the upstream's reported usage whenever there is one.
 */
export function estimateChatPromptTokens(messages: unknown, count: (text: string) => number = countTextTokens): number {
  if (!Array.isArray(messages)) return 0;
  let tokens = 3;
  for (const m of messages as Array<Record<string, unknown> | null>) {
    tokens += 3;
    for (const key of ["role", "content", "name"] as const) {
      const value = m?.[key];
      if (value === undefined || value === null) continue;
      tokens += count(key === "content" ? contentText(value) : String(value));
      if (key === "name") tokens += 1;
    }
  }
  return tokens;
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((p) => (typeof p?.text === "string" ? p.text : "")).join("");
}
