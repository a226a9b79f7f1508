/**
 * Usage numbers come from upstreams, and an upstream can be wrong or hostile: 1e9 completion tokens
 * for a 3-token answer, -5, 2.5, 1e400 (Infinity after JSON.parse), "12". None of that may become a
 * 500, free output, or a drained account. A count is credible when it is a non-negative integer no
 * larger than what the request allowed; otherwise reelay counts locally (capped to the allowance)
 * and records the anomaly on the usage row.
 */

/** Bound for counts nothing else bounds (a model with no output or context limit): far beyond any real request. */
export const ABSURD_TOKENS = 10_000_000;

export interface CredibleCount {
  tokens: number;
  source: "upstream" | "local";
  /** what was wrong with the reported number, for the usage row (null: nothing) */
  anomaly: string | null;
}

/**
 * `reported`: the upstream's number (anything; undefined/null when it reported none).
 * `local`: reelay's own count of the same thing. `max`: the most the request allowed.
 */
export function credibleCount(field: string, reported: unknown, o: { local: number | (() => number); max: number }): CredibleCount {
  const max = Math.max(0, Math.floor(o.max));
  if (typeof reported === "number" && Number.isSafeInteger(reported) && reported >= 0 && reported <= max) return { tokens: reported, source: "upstream", anomaly: null };
  // counted locally only when needed: tokenizing a long reply costs CPU on every request otherwise
  const raw = typeof o.local === "function" ? o.local() : o.local;
  const local = Number.isSafeInteger(raw) && raw >= 0 ? raw : 0;
  const capped = Math.min(local, max);
  const localAnomaly = local > max ? `${field}: counted ${local} > ${max} allowed; capped` : null;
  if (reported === undefined || reported === null) return { tokens: capped, source: "local", anomaly: localAnomaly };
  if (typeof reported !== "number" || !Number.isSafeInteger(reported) || reported < 0) {
    return { tokens: capped, source: "local", anomaly: joinAnomalies(`${field}: upstream reported ${show(reported)}, not a count; counted locally`, localAnomaly) };
  }
  return { tokens: capped, source: "local", anomaly: joinAnomalies(`${field}: upstream reported ${reported} > ${max} allowed; counted locally`, localAnomaly) };
}

export function joinAnomalies(...parts: Array<string | null | undefined>): string | null {
  const p = parts.filter((x): x is string => Boolean(x));
  return p.length ? p.join("; ") : null;
}

function show(v: unknown): string {
  const s = typeof v === "string" ? JSON.stringify(v) : String(v);
  return s.length > 40 ? s.slice(0, 40) + "…" : s;
}

export interface CredibleCacheCounts {
  /** prompt tokens read from the upstream's prompt cache */
  cached: number;
  /** prompt tokens written to it */
  cacheWrite: number;
  anomaly: string | null;
}

/**
 * The cached and cache-write parts of a credible prompt count, as the upstream reported them:
 * each a count, together at most the prompt. Anything else is billed as ordinary prompt tokens
 * (0 here) with the anomaly: a hostile upstream could otherwise have a whole prompt billed at a
 * cache-read price, or (a cache write costs more) drain an account. A prompt reelay counted itself
 * (the upstream's was not credible, or missing) has no cache parts: they were the upstream's.
 */
export function credibleCacheCounts(reported: { cached?: unknown; cacheWrite?: unknown }, prompt: CredibleCount): CredibleCacheCounts {
  const none = (v: unknown) => v === undefined || v === null;
  if (none(reported.cached) && none(reported.cacheWrite)) return { cached: 0, cacheWrite: 0, anomaly: null };
  if (prompt.source !== "upstream") return { cached: 0, cacheWrite: 0, anomaly: "cache tokens: ignored with the upstream's prompt count; billed at the input price" };
  const count = (field: string, v: unknown): { n: number; anomaly: string | null } => {
    if (none(v)) return { n: 0, anomaly: null };
    if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) return { n: v, anomaly: null };
    return { n: 0, anomaly: `${field}: upstream reported ${show(v)}, not a count; billed at the input price` };
  };
  const cached = count("cached_tokens", reported.cached);
  const cacheWrite = count("cache_write_tokens", reported.cacheWrite);
  if (cached.n + cacheWrite.n > prompt.tokens) {
    return { cached: 0, cacheWrite: 0, anomaly: `cache tokens: upstream reported ${cached.n} cached + ${cacheWrite.n} written > ${prompt.tokens} prompt tokens; billed at the input price` };
  }
  return { cached: cached.n, cacheWrite: cacheWrite.n, anomaly: joinAnomalies(cached.anomaly, cacheWrite.anomaly) };
}
