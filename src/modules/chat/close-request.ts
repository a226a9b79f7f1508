/**
 * The end of every chat request: turn what the upstream reported and what reelay counted into
 * credible usage (usage-sanity.ts), then settle or release the request's charge.
 */
import { credibleCacheCounts, credibleCount, joinAnomalies, type Charge } from "../../billing/index.ts";

/** The most a request may be billed for, in tokens. */
export interface ChatAllowance {
  prompt: number;
  completion: number;
}

export interface ChatOutcome {
  /** HTTP status the client got (200 for a stream that failed after its headers) */
  status: number;
  /** false: nothing is charged and the worst case is given back (no token was produced or delivered) */
  charge: boolean;
  /** the upstream's numbers as received (anything at all; undefined when it reported none) */
  reported: ReportedUsage;
  /** reelay's own counts: the prompt estimate, and the completion tokens it can see (lazily counted) */
  local: { prompt: number; completion: number | (() => number) };
  /** completion tokens actually written to the client (null: all of the billed completion, a non-streamed reply) */
  deliveredTokens: number | null;
  disconnected: boolean;
  errorCode: string | null;
}

/** An upstream's usage numbers as received, each anything at all (undefined: not reported). */
export interface ReportedUsage {
  prompt: unknown;
  completion: unknown;
  /** of the prompt: read from the upstream's prompt cache */
  cached?: unknown;
  /** of the prompt: written to the upstream's prompt cache */
  cacheWrite?: unknown;
}

/**
 * The numbers of an OpenAI-shaped usage object, unchecked: `prompt_tokens` (every prompt token),
 * `completion_tokens`, and of the prompt `prompt_tokens_details.cached_tokens` (OpenAI's cache
 * reads) and `prompt_tokens_details.cache_write_tokens` (cache writes, as OpenRouter names them).
 */
export function reportedUsage(u: unknown): ReportedUsage {
  if (typeof u !== "object" || u === null) return { prompt: undefined, completion: undefined };
  const x = u as { prompt_tokens?: unknown; completion_tokens?: unknown; prompt_tokens_details?: { cached_tokens?: unknown; cache_write_tokens?: unknown } | null };
  const d = typeof x.prompt_tokens_details === "object" && x.prompt_tokens_details !== null ? x.prompt_tokens_details : undefined;
  return { prompt: x.prompt_tokens, completion: x.completion_tokens, cached: d?.cached_tokens, cacheWrite: d?.cache_write_tokens };
}

/** What a request was billed for: credible counts and micro-dollars. */
export interface ClosedRequest {
  cost: number;
  promptTokens: number;
  completionTokens: number;
  /** of promptTokens: billed at the cache-read price */
  cachedTokens: number;
  /** of promptTokens: billed at the cache-write price */
  cacheWriteTokens: number;
  anomaly: string | null;
}

/**
 * Settle or release; returns the micro-dollars charged. `inProcess`: the plugin counts usage with
 * the model's own tokenizer inside reelay (ChatCapability.countsTokens), so even its credible
 * report is a local count.
 */
export function closeRequest(charge: Charge, allowed: ChatAllowance, out: ChatOutcome, inProcess = false): ClosedRequest {
  const reportedCompletion = typeof out.reported.completion === "number" && Number.isSafeInteger(out.reported.completion) && out.reported.completion >= 0 ? out.reported.completion : null;
  if (!out.charge) {
    charge.release({ status: out.status, deliveredTokens: out.deliveredTokens, reportedTokens: reportedCompletion, tokenSource: null, disconnected: out.disconnected, errorCode: out.errorCode });
    return { cost: 0, promptTokens: 0, completionTokens: 0, cachedTokens: 0, cacheWriteTokens: 0, anomaly: null };
  }
  const prompt = credibleCount("prompt_tokens", out.reported.prompt, { local: out.local.prompt, max: allowed.prompt });
  const completion = credibleCount("completion_tokens", out.reported.completion, { local: out.local.completion, max: allowed.completion });
  const cache = credibleCacheCounts(out.reported, prompt);
  const anomaly = joinAnomalies(prompt.anomaly, completion.anomaly, cache.anomaly);
  const cost = charge.settle({
    status: out.status,
    usage: { promptTokens: prompt.tokens, completionTokens: completion.tokens, cachedTokens: cache.cached, cacheWriteTokens: cache.cacheWrite },
    deliveredTokens: out.deliveredTokens ?? completion.tokens,
    reportedTokens: reportedCompletion,
    tokenSource: inProcess ? "local" : completion.source,
    disconnected: out.disconnected,
    errorCode: out.errorCode,
    anomaly,
  });
  return { cost, promptTokens: prompt.tokens, completionTokens: completion.tokens, cachedTokens: cache.cached, cacheWriteTokens: cache.cacheWrite, anomaly };
}
