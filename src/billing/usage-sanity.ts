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
