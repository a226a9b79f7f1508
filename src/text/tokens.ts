/**
 * reelay's own token counter (cl100k_base ranks, counted by bpe-counter.ts in linear time), used
 * when an upstream reports no usage and to estimate prompt tokens for holds. Upstream models
 * tokenize differently (typically within ±15% on English), so counts made here are recorded as
 * `token_source: "local"`.
 */
import cl100k_base from "js-tiktoken/ranks/cl100k_base";
import { BpeCounter } from "./bpe-counter.ts";

/**
 * Built when first needed, not at import (130–300 ms and 31 MB, measured in the compiled binary):
 * start-up stays in milliseconds and an idle server does not hold it. The model registry warms it
 * (warmTokenCounter, in slices that leave the event loop free) as part of loading a model whose
 * requests are counted with it — chat models and embeddings models without their own tokenizer —
 * so requests never build it on the event loop. Immutable once built; this cache is the module's
 * only state.
 */
let cl100k: BpeCounter | undefined;
let building: Promise<void> | undefined;
const counter = () => (cl100k ??= new BpeCounter(cl100k_base));

/** Build the cl100k table without holding the event loop (resolves at once when it is built). */
export function warmTokenCounter(): Promise<void> {
  if (cl100k) return Promise.resolve();
  return (building ??= BpeCounter.build(cl100k_base).then((c) => {
    cl100k ??= c;
  }));
}

/**
 * cl100k_base tokens of `text`, in time linear in its length (~10 MB/s on English here). `limit`
 * stops the count there: a caller capping a bill at N tokens pays for at most N tokens of work.
 */
export function countTextTokens(text: string, limit?: number): number {
  return counter().count(text, limit);
}

/**
 * UTF-8 bytes counted exactly per request estimate; past them each byte counts as one token (a
 * true upper bound: every byte-level BPE token is at least one byte). 16 KiB take 1 ms (English)
 * to ~8 ms (random CJK or random ASCII, the slowest texts measured) on a loaded 2-core machine, so
 * one request never holds the event loop longer than that however large its prompt; the bound
 * over-holds only the part beyond (~4× on English), and the hold is released at settlement.
 */
export const EXACT_ESTIMATE_BYTES = 16 * 1024;

/**
 * Counts of recent long prompt texts, by a 64-bit hash of the text (not the text: prompts are not
 * kept around). A conversation resends its system prompt and history with every turn, so most of a
 * long prompt was counted a moment ago: hashing 4 KB takes ~0.5 µs where counting it takes ~400 µs
 * (~10 MB/s). A cache of a pure function: it changes no count, only how fast it comes; a hash
 * collision (odds ~2⁻⁶⁴ per pair) would only misestimate a hold, never a bill.
 */
class CountMemo {
  private readonly counts = new Map<bigint, number>();
  constructor(private readonly maxEntries: number) {}
  get(hash: bigint): number | undefined {
    return this.counts.get(hash);
  }
  set(hash: bigint, tokens: number): void {
    // oldest first out (a Map iterates in insertion order)
    if (this.counts.size >= this.maxEntries) this.counts.delete(this.counts.keys().next().value!);
    this.counts.set(hash, tokens);
  }
}

/** Texts shorter than this count faster than they hash; 50,000 entries take ~4 MB. */
const MEMO_MIN_CHARS = 256;
const memo = new CountMemo(50_000);

/**
 * A per-request token estimate: exact for the first `exactBytes` bytes of text, one token per byte
 * after. Texts counted recently (memo) come back at once and do not use up the exact budget.
 */
export function tokenEstimator(exactBytes = EXACT_ESTIMATE_BYTES): (text: string) => number {
  let left = exactBytes;
  return (text) => {
    const hash = text.length >= MEMO_MIN_CHARS ? Bun.hash.wyhash(text) : null;
    const known = hash === null ? undefined : memo.get(hash);
    if (known !== undefined) return known;
    const bytes = Buffer.byteLength(text, "utf8");
    if (bytes <= left) {
      left -= bytes;
      const tokens = countTextTokens(text);
      if (hash !== null) memo.set(hash, tokens);
      return tokens;
    }
    left = 0;
    return bytes;
  };
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
 * The default counter is bounded in time (tokenEstimator); pass `countTextTokens` for an exact count.
 */
export function estimateChatPromptTokens(messages: unknown, count: (text: string) => number = tokenEstimator()): number {
  if (!Array.isArray(messages)) return 0;
  let tokens = 3;
  for (const m of messages as Array<Record<string, unknown> | null>) {
    tokens += 3;
    for (const key of ["role", "content", "name"] as const) {
      const value = m?.[key];
      if (value === undefined || value === null) continue;
      tokens += count(key === "content" ? contentText(value) : typeof value === "string" ? value : safeJson(value));
      if (key === "name") tokens += 1;
    }
  }
  return tokens;
}

/** Prompt estimate of a whole chat body for a hold: messages plus tool definitions (as their JSON), one time budget. */
export function estimateChatRequestTokens(body: { messages?: unknown; tools?: unknown }): number {
  const count = tokenEstimator();
  const tools = body.tools ? count(safeJson(body.tools)) : 0;
  return estimateChatPromptTokens(body.messages, count) + tools;
}

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((p) => (typeof p?.text === "string" ? p.text : "")).join("");
}

/** JSON of an already-parsed body value (parsed JSON always serializes; "" if not). */
function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "";
  } catch {
    return "";
  }
}
