/**
 * An OpenAI chat request, checked against what a local GGUF model can do. What cannot be honoured
 * (tools, JSON mode, logprobs, images, n > 1 …) is refused with a 400 naming the parameter instead
 * of being silently ignored; parameters that change nothing for a local model (user, metadata …)
 * are accepted. `top_k`, `min_p` and `repeat_penalty` are accepted as llama.cpp-server extensions.
 */
import { PluginError } from "@reelay/plugin-sdk";

export interface ChatMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface Sampling {
  /** 0 = greedy */
  temperature: number;
  topP: number;
  /** 0 = all tokens */
  topK: number;
  minP: number;
  /** uint32 given to llama.cpp's sampler */
  seed: number;
  /** null: no penalty */
  penalties: { frequency: number; presence: number; repeat: number } | null;
}

export interface ChatParams {
  messages: ChatMessage[];
  /** the smaller of max_tokens and max_completion_tokens (already clamped by the host) */
  maxTokens: number | undefined;
  stop: string[];
  sampling: Sampling;
}

/** OpenAI parameters that change nothing for a local model. */
const IGNORED = new Set(["model", "stream", "stream_options", "user", "metadata", "store", "service_tier", "safety_identifier", "prompt_cache_key", "parallel_tool_calls"]);
const HANDLED = new Set(["messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k", "min_p", "seed", "stop", "frequency_penalty", "presence_penalty", "repeat_penalty", "n", "logprobs", "top_logprobs", "tools", "tool_choice", "functions", "function_call", "response_format"]);
/** Stop sequences, as OpenAI allows. */
const MAX_STOP = 4;

const invalid = (message: string, param: string, code?: string) => new PluginError("invalid_request", message, { param, code });
const unsupported = (param: string, what: string) =>
  invalid(`'${param}' is not supported by local GGUF models (${what}).`, param, "unsupported_parameter");

export function parseChatRequest(body: Record<string, unknown>, random: () => number = Math.random): ChatParams {
  for (const key of Object.keys(body)) {
    // null is "not given" (OpenAI marks audio, modalities, prediction, verbosity … nullable)
    if (!IGNORED.has(key) && !HANDLED.has(key) && body[key] !== null) throw invalid(`Unrecognized request argument supplied: ${key}`, key, "unsupported_parameter");
  }
  refuseUnsupported(body);
  const maxes = [body.max_tokens, body.max_completion_tokens].filter((v): v is number => typeof v === "number");
  return {
    messages: parseMessages(body.messages),
    maxTokens: maxes.length ? Math.min(...maxes) : undefined,
    stop: parseStop(body.stop),
    sampling: parseSampling(body, random),
  };
}

function refuseUnsupported(body: Record<string, unknown>): void {
  const has = (k: string) => body[k] !== undefined && body[k] !== null;
  if (has("n") && body.n !== 1) throw invalid("'n' must be 1: local GGUF models generate one choice per request.", "n", "unsupported_parameter");
  if (body.logprobs === true) throw unsupported("logprobs", "token log probabilities are not returned");
  if (has("top_logprobs")) throw unsupported("top_logprobs", "token log probabilities are not returned");
  if (has("tools") && !(Array.isArray(body.tools) && body.tools.length === 0)) throw unsupported("tools", "no tool calling");
  if (has("functions") && !(Array.isArray(body.functions) && body.functions.length === 0)) throw unsupported("functions", "no function calling");
  if (has("tool_choice") && body.tool_choice !== "none" && body.tool_choice !== "auto") throw unsupported("tool_choice", "no tool calling");
  if (has("function_call") && body.function_call !== "none" && body.function_call !== "auto") throw unsupported("function_call", "no function calling");
  const rf = body.response_format as { type?: unknown } | null | undefined;
  if (rf !== undefined && rf !== null && rf.type !== "text") throw unsupported("response_format", "only {\"type\": \"text\"}; no JSON mode or JSON schema");
}

function parseMessages(raw: unknown): ChatMessage[] {
  if (!Array.isArray(raw) || raw.length === 0) throw invalid("'messages' must be a non-empty array.", "messages");
  return raw.map((m, i) => {
    const at = `messages[${i}]`;
    if (typeof m !== "object" || m === null) throw invalid(`${at} must be an object.`, at);
    const { role, content, tool_calls } = m as Record<string, unknown>;
    if (role === "tool" || role === "function") throw unsupported(`${at}.role`, `no tool calling, so no '${role}' messages`);
    if (role !== "system" && role !== "developer" && role !== "user" && role !== "assistant") {
      throw invalid(`${at}.role must be one of system, developer, user, assistant.`, `${at}.role`);
    }
    if (tool_calls !== undefined && tool_calls !== null) throw unsupported(`${at}.tool_calls`, "no tool calling");
    return { role: role === "developer" ? "system" : role, content: messageText(content, `${at}.content`, role === "assistant") };
  });
}

/** A string, or text parts (`[{type: "text", text}]`); assistant messages may have null content. */
function messageText(content: unknown, param: string, mayBeNull: boolean): string {
  if (typeof content === "string") return content;
  if ((content === null || content === undefined) && mayBeNull) return "";
  if (!Array.isArray(content)) throw invalid(`${param} must be a string or an array of text parts.`, param);
  return content
    .map((part, j) => {
      const p = part as { type?: unknown; text?: unknown } | null;
      if (p?.type === "text" && typeof p.text === "string") return p.text;
      const type = typeof p?.type === "string" ? p.type : "unknown";
      if (p?.type !== "text") throw unsupported(`${param}[${j}]`, `only text parts; this model does not read '${type}' content`);
      throw invalid(`${param}[${j}].text must be a string.`, `${param}[${j}].text`);
    })
    .join("");
}

function parseStop(raw: unknown): string[] {
  if (raw === undefined || raw === null) return [];
  const list = typeof raw === "string" ? [raw] : raw;
  if (!Array.isArray(list) || list.some((s) => typeof s !== "string")) throw invalid("'stop' must be a string or an array of strings.", "stop");
  if (list.length > MAX_STOP) throw invalid(`'stop' may have at most ${MAX_STOP} sequences.`, "stop");
  return (list as string[]).filter((s) => s.length > 0);
}

function parseSampling(body: Record<string, unknown>, random: () => number): Sampling {
  // OpenAI's defaults (temperature 1, top_p 1, no top-k), not llama.cpp's, so a client gets what it would from OpenAI
  const temperature = num(body, "temperature", 0, 2) ?? 1;
  const topP = num(body, "top_p", 0, 1) ?? 1;
  const topK = int(body, "top_k", 0, 1_000_000) ?? 0;
  const minP = num(body, "min_p", 0, 1) ?? 0;
  const frequency = num(body, "frequency_penalty", -2, 2) ?? 0;
  const presence = num(body, "presence_penalty", -2, 2) ?? 0;
  const repeat = num(body, "repeat_penalty", 0, 10) ?? 1;
  const seed = body.seed === undefined || body.seed === null ? Math.floor(random() * 2 ** 32) : seedOf(body.seed);
  return {
    // top_p 0 keeps only the most likely token: that is greedy decoding
    temperature: topP === 0 ? 0 : temperature,
    topP,
    topK,
    minP,
    seed,
    penalties: frequency === 0 && presence === 0 && repeat === 1 ? null : { frequency, presence, repeat },
  };
}

/** OpenAI takes any 64-bit integer; llama.cpp's sampler takes 32 bits: the low 32 bits are used. */
function seedOf(v: unknown): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v)) throw invalid("'seed' must be an integer.", "seed");
  return Number(BigInt.asUintN(32, BigInt(v)));
}

function num(body: Record<string, unknown>, key: string, lo: number, hi: number): number | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v) || v < lo || v > hi) throw invalid(`'${key}' must be a number from ${lo} to ${hi}.`, key);
  return v;
}

function int(body: Record<string, unknown>, key: string, lo: number, hi: number): number | undefined {
  const v = num(body, key, lo, hi);
  if (v !== undefined && !Number.isInteger(v)) throw invalid(`'${key}' must be an integer.`, key);
  return v;
}
