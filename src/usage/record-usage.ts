/**
 * The one writer of usage_records. A usage row is written by the statement that settles the
 * request's money (billing/settle-batch.ts), so it exists exactly when its money moved, and its
 * `ref` is the settlement's exactly-once key (unique index usage_ref_uniq).
 */
import { sql, type SQL } from "drizzle-orm";
import type { usageRecords } from "../db/schema/index.ts";

export type UsageRow = typeof usageRecords.$inferInsert;
/** a usage row whose cost is decided by the statement that moves the money */
export type UsageFacts = Omit<UsageRow, "cost" | "id" | "createdAt" | "budgetWindows">;

const INT4_MAX = 2_147_483_647;
/** integer columns: a value the column cannot hold becomes null rather than failing the whole batch */
const int4 = (n: number | null | undefined) => (typeof n === "number" && Number.isSafeInteger(n) && n >= -INT4_MAX && n <= INT4_MAX ? n : null);

/** One usage row as JSON for a settlement batch (short keys: a batch carries hundreds). */
export function usageJson(u: UsageFacts) {
  return {
    a: u.accountId, r: u.ref, k: u.keyId ?? null, kind: u.kind, model: u.model,
    pt: int4(u.promptTokens), ca: int4(u.cachedTokens), cw: int4(u.cacheWriteTokens), ct: int4(u.completionTokens), dt: int4(u.deliveredTokens), rt: int4(u.reportedTokens),
    ts: u.tokenSource ?? null, sec: int4(u.seconds), st: int4(u.status) ?? 500, dc: u.disconnected ?? false,
    lat: int4(u.latencyMs), pl: u.plugin ?? null, ec: u.errorCode ?? null, an: u.anomaly ?? null, ro: u.route ?? null, pb: u.priceBasis ?? null,
    pn: u.plan ?? null, pr: u.pricing ?? null,
  };
}

/** The usage row of a `usageJson` object (a journal line read back): usageJson(usageFromJson(j)) is j again. */
export function usageFromJson(j: ReturnType<typeof usageJson>): UsageFacts {
  return {
    accountId: j.a, ref: j.r, keyId: j.k, kind: j.kind, model: j.model,
    promptTokens: j.pt, cachedTokens: j.ca, cacheWriteTokens: j.cw, completionTokens: j.ct, deliveredTokens: j.dt, reportedTokens: j.rt,
    tokenSource: j.ts, seconds: j.sec, status: j.st, disconnected: j.dc,
    latencyMs: j.lat, plugin: j.pl, errorCode: j.ec, anomaly: j.an, route: j.ro, priceBasis: j.pb,
    plan: j.pn, pricing: j.pr,
  };
}

/** The record type of `usageJson` rows for json_to_recordset. */
export const USAGE_JSON_COLUMNS = sql.raw(
  "a text, r text, k text, kind text, model text, pt int, ca int, cw int, ct int, dt int, rt int, ts text, sec int, st int, dc boolean, lat int, pl text, ec text, an text, ro text, pb text, pn text, pr text",
);

/** INSERT the usage rows of `source` (a CTE with the USAGE_JSON_COLUMNS), `cost` and the budget windows it counted in given as SQL over it. */
export function insertUsageFrom(source: SQL, cost: SQL, windows: SQL = sql`NULL::text[]`): SQL {
  return sql`INSERT INTO usage_records (account_id, key_id, ref, kind, model, prompt_tokens, cached_tokens, cache_write_tokens, completion_tokens, delivered_tokens, reported_tokens, token_source, seconds, cost, status, disconnected, latency_ms, plugin, error_code, anomaly, route, price_basis, plan, pricing, budget_windows)
    SELECT a, k, r, kind, model, pt, ca, cw, ct, dt, rt, ts, sec, ${cost}, st, dc, lat, pl, ec, an, ro, pb, pn, pr, ${windows} FROM ${source}`;
}
