/**
 * Prompt-token estimate for a chat body, for holds before the upstream reports usage.
 *
 * Formula (OpenAI cookbook, "How to count tokens with tiktoken", gpt-3.5/4 family):
 *   3 per message + tokens(role) + tokens(content text) + tokens(name) + 1 if name is present,
 *   + 3 for the priming of the reply.
 * Content parts count their `text`; images, audio, tool definitions and tool calls are not counted,
 * so callers holding credit should add their own margin for those. cl100k_base is the default
 * tokenizer: upstream models (Llama, Qwen, Mistral…) tokenize differently, typically within ±15%
 * of it on English text, so this is an estimate, never a bill.
 */
import { Tiktoken } from "js-tiktoken/lite";
import cl100k_base from "js-tiktoken/ranks/cl100k_base";

// Built once: parsing the rank table takes ~100 ms, far too slow per request.
const cl100k = new Tiktoken(cl100k_base);

export function countTextTokens(text: string): number {
  return cl100k.encode(text).length;
}

export function estimatePromptTokens(messages: unknown, count: (text: string) => number = countTextTokens): number {
  if (!Array.isArray(messages)) return 0;
  let tokens = 3;
  for (const m of messages as Array<Record<string, unknown> | null>) {
    tokens += 3;
    if (typeof m?.role === "string") tokens += count(m.role);
    const text = contentText(m?.content);
    if (text) tokens += count(text);
    if (typeof m?.name === "string") tokens += count(m.name) + 1;
  }
  return tokens;
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((p) => (typeof p?.text === "string" ? p.text : "")).join("");
}
