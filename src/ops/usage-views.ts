/**
 * Admin usage views over usage_records, one exported function per statement. The range is half-open
 * [from, to) on created_at, which usage_created_idx serves. Sums come back from Postgres as bigint /
 * numeric strings; they are converted to numbers here (credits are micro-dollars: exact up to 2^53,
 * about 9 billion USD).
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../db/index.ts";
import { badRequest } from "../errors.ts";
import { CLIENT_ERROR, UPSTREAM_FAILED } from "../usage/outcome.ts";

export interface TimeRange {
  from: Date;
  to: Date;
}

const DAY_MS = 86_400_000;

/** `from`/`to` as ISO 8601 (a date or a date-time); default: the last 24 hours. */
export function parseRange(from: string | undefined, to: string | undefined, now = new Date()): TimeRange {
  const parse = (raw: string | undefined, param: string) => {
    if (raw === undefined || raw === "") return null;
    const d = /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(raw) ? new Date(raw) : new Date(NaN);
    if (Number.isNaN(d.getTime())) throw badRequest(`'${param}' must be an ISO 8601 date or date-time (e.g. 2025-01-31 or 2025-01-31T12:00:00Z), got "${raw}".`, param);
    return d;
  };
  const end = parse(to, "to") ?? now;
  const start = parse(from, "from") ?? new Date(end.getTime() - DAY_MS);
  if (start.getTime() >= end.getTime()) throw badRequest("'from' must be before 'to'.", "from");
  return { from: start, to: end };
}

export interface UsageTotals {
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  tokens: number;
  seconds: number;
  credits: number;
}

const totals = (r: Record<string, unknown>): UsageTotals => {
  const prompt = Number(r.prompt_tokens ?? 0);
  const completion = Number(r.completion_tokens ?? 0);
  return { requests: Number(r.requests ?? 0), prompt_tokens: prompt, completion_tokens: completion, tokens: prompt + completion, seconds: Number(r.seconds ?? 0), credits: Number(r.credits ?? 0) };
};

const SUMS = sql`count(*) AS requests,
  coalesce(sum(u.prompt_tokens), 0)::bigint AS prompt_tokens,
  coalesce(sum(u.completion_tokens), 0)::bigint AS completion_tokens,
  coalesce(sum(u.seconds), 0)::bigint AS seconds,
  coalesce(sum(u.cost), 0)::bigint AS credits`;

/** Per account, most credits first; `limit` makes it the "top accounts" view. */
export async function usageByAccount(db: Tx, range: TimeRange, opts: { accountId?: string; limit?: number } = {}) {
  const rows = await query<Record<string, unknown>>(db, sql`
    SELECT u.account_id, a.name AS account_name, ${SUMS}
    FROM usage_records u JOIN accounts a ON a.id = u.account_id
    WHERE u.created_at >= ${range.from.toISOString()} AND u.created_at < ${range.to.toISOString()}
      ${opts.accountId ? sql`AND u.account_id = ${opts.accountId}` : sql``}
    GROUP BY u.account_id, a.name
    ORDER BY credits DESC, u.account_id
    ${opts.limit ? sql`LIMIT ${opts.limit}` : sql``}`);
  return rows.map((r) => ({ account_id: String(r.account_id), account_name: String(r.account_name), ...totals(r) }));
}

/** Per model and kind, most credits first. */
export async function usageByModel(db: Tx, range: TimeRange, opts: { accountId?: string } = {}) {
  const rows = await query<Record<string, unknown>>(db, sql`
    SELECT u.model, u.kind, ${SUMS}
    FROM usage_records u
    WHERE u.created_at >= ${range.from.toISOString()} AND u.created_at < ${range.to.toISOString()}
      ${opts.accountId ? sql`AND u.account_id = ${opts.accountId}` : sql``}
    GROUP BY u.model, u.kind
    ORDER BY credits DESC, u.model, u.kind`);
  return rows.map((r) => ({ model: String(r.model), kind: String(r.kind), ...totals(r) }));
}

/**
 * Per plugin and model with at least one failure of the model or its upstream (src/usage/outcome.ts:
 * a client's own 4xx is not one), most failures first. error_rate is failures / all requests of
 * that plugin and model in the range; client_errors counts the clients' own errors apart.
 */
export async function failingUpstreams(db: Tx, range: TimeRange) {
  const rows = await query<Record<string, unknown>>(db, sql`
    WITH ranged AS (
      SELECT plugin, model, ${UPSTREAM_FAILED} AS failed, ${CLIENT_ERROR} AS client_error, error_code, status, created_at
      FROM usage_records u
      WHERE u.created_at >= ${range.from.toISOString()} AND u.created_at < ${range.to.toISOString()}
    )
    SELECT coalesce(g.plugin, 'unknown') AS plugin, g.model,
           count(*) AS requests,
           count(*) FILTER (WHERE g.failed) AS errors,
           count(*) FILTER (WHERE g.client_error) AS client_errors,
           max(g.created_at) FILTER (WHERE g.failed) AS last_error_at,
           (SELECT json_object_agg(c.code, c.n) FROM (
              SELECT coalesce(e.error_code, 'http_' || e.status) AS code, count(*) AS n FROM ranged e
              WHERE e.failed AND e.plugin IS NOT DISTINCT FROM g.plugin AND e.model = g.model
              GROUP BY 1) c) AS error_codes
    FROM ranged g
    GROUP BY g.plugin, g.model
    HAVING count(*) FILTER (WHERE g.failed) > 0
    ORDER BY errors DESC, plugin, model`);
  return rows.map((r) => {
    const requests = Number(r.requests);
    const errors = Number(r.errors);
    const codes = typeof r.error_codes === "string" ? JSON.parse(r.error_codes) : (r.error_codes ?? {});
    return {
      plugin: String(r.plugin),
      model: String(r.model),
      requests,
      errors,
      client_errors: Number(r.client_errors),
      error_rate: requests ? Math.round((errors / requests) * 10_000) / 10_000 : 0,
      error_codes: Object.fromEntries(Object.entries(codes as Record<string, unknown>).map(([k, v]) => [k, Number(v)])),
      last_error_at: r.last_error_at ? new Date(r.last_error_at as string).toISOString() : null,
    };
  });
}
