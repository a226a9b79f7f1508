/**
 * Budget windows in the database. A window is one period of a budget (a day in its timezone, a week
 * from Monday, a month, or the whole life of a lifetime budget); its row holds what was charged in
 * it (`spent`) and what is reserved in it (`held`). Periods are computed by Postgres
 * (`date_trunc` in the budget's timezone, so DST days have 23 or 25 hours) at an instant the
 * caller gives: the credit engine's clock, which tests move across midnight.
 *
 * Lock order, as everywhere in billing: holds, then accounts, then budget windows (each by id).
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../db/index.ts";

export type Period = "day" | "week" | "month" | "lifetime";
export const PERIODS: readonly Period[] = ["day", "week", "month", "lifetime"];

/** The current window of one budget, as an instance caches it. */
export interface WindowInfo {
  /** window id: "<budget id>@<start, unix seconds>" or "<budget id>@life" */
  id: string;
  budgetId: string;
  /** the key it limits (null: the whole account) */
  keyId: string | null;
  period: Period;
  timezone: string;
  /** model ids it counts (null: every model) */
  models: string[] | null;
  limit: number;
  thresholds: number[];
  /** unix ms */
  startsAt: number;
  /** unix ms; null for lifetime */
  endsAt: number | null;
}

export interface AccountWindows {
  /** accounts.budgets_version the set was read at (-1: no such account) */
  version: number;
  windows: WindowInfo[];
}

/** A window's live figures. `idle`: part of `held` that leases reserved ahead and no request uses yet. */
export interface WindowFigures {
  id: string;
  limit: number;
  spent: number;
  held: number;
  idle: number;
}

/** A Postgres text[] as one parameter (ids never contain commas). */
export const idList = (ids: readonly string[]) => sql`string_to_array(${ids.join(",")}, ',')::text[]`;

const asArray = (v: unknown): string[] | null => (v === null || v === undefined ? null : Array.isArray(v) ? v.map(String) : String(v).replace(/^\{|\}$/g, "").split(",").filter(Boolean).map((s) => s.replace(/^"|"$/g, "")));
const asNumbers = (v: unknown): number[] => (asArray(v) ?? []).map(Number);

/**
 * The window containing `at` (unix ms) of every active budget of the account and of its keys,
 * created when missing, and the account's budgets version read in the same snapshot. One statement.
 */
export async function currentWindows(tx: Tx, accountId: string, at: number): Promise<AccountWindows> {
  const t = new Date(at).toISOString();
  const rows = await query<{ v: number; wid: string | null; budget_id: string; key_id: string | null; period: Period; timezone: string; models: unknown; limit_amount: number; thresholds: unknown; s: number; e: number | null }>(tx, sql`
    WITH acc AS (
      SELECT budgets_version AS v FROM accounts WHERE id = ${accountId}
    ), b AS (
      SELECT b.*, (${t}::timestamptz AT TIME ZONE b.timezone) AS lt FROM budgets b WHERE b.account_id = ${accountId} AND b.removed_at IS NULL
    ), w AS (
      SELECT b.id AS budget_id, b.key_id, b.period, b.timezone, b.models, b.limit_amount, b.thresholds,
        CASE WHEN b.period = 'lifetime' THEN b.created_at ELSE date_trunc(b.period, b.lt) AT TIME ZONE b.timezone END AS s,
        CASE WHEN b.period = 'lifetime' THEN NULL ELSE (date_trunc(b.period, b.lt) + ('1 ' || b.period)::interval) AT TIME ZONE b.timezone END AS e
      FROM b
    ), wi AS (
      SELECT w.*, w.budget_id || '@' || CASE WHEN w.period = 'lifetime' THEN 'life' ELSE floor(extract(epoch FROM w.s))::bigint::text END AS wid FROM w
    ), ins AS (
      INSERT INTO budget_windows (id, budget_id, account_id, starts_at, ends_at, limit_amount)
      SELECT wid, budget_id, ${accountId}, s, e, limit_amount FROM wi
      ON CONFLICT (id) DO NOTHING
    )
    SELECT acc.v, wi.wid, wi.budget_id, wi.key_id, wi.period, wi.timezone, wi.models, wi.limit_amount::float8 AS limit_amount, wi.thresholds,
      (extract(epoch FROM wi.s) * 1000)::float8 AS s, (extract(epoch FROM wi.e) * 1000)::float8 AS e
    FROM acc LEFT JOIN wi ON true ORDER BY wi.wid`);
  if (rows.length === 0) return { version: -1, windows: [] };
  const windows = rows.filter((r) => r.wid !== null).map((r): WindowInfo => ({
    id: r.wid!, budgetId: r.budget_id, keyId: r.key_id, period: r.period, timezone: r.timezone, models: asArray(r.models), limit: Number(r.limit_amount),
    thresholds: asNumbers(r.thresholds), startsAt: Math.round(Number(r.s)), endsAt: r.e === null ? null : Math.round(Number(r.e)),
  }));
  return { version: Number(rows[0]!.v), windows };
}

/**
 * Live figures of windows: limit, spent, held, and the idle part of the leases reserving in each
 * (as their owners last published what they have in flight).
 */
export async function windowFigures(tx: Tx, ids: readonly string[]): Promise<Map<string, WindowFigures>> {
  const out = new Map<string, WindowFigures>();
  if (ids.length === 0) return out;
  const rows = await query<{ id: string; limit_amount: number; spent: number; held: number; idle: number }>(tx, sql`
    SELECT w.id, w.limit_amount::float8 AS limit_amount, w.spent::float8 AS spent, w.held::float8 AS held,
      COALESCE((SELECT sum(h.amount - LEAST(h.in_flight, h.amount)) FROM holds h
        WHERE h.account_id = w.account_id AND h.state = 'open' AND h.kind = 'lease' AND w.id = ANY (h.windows)), 0)::float8 AS idle
    FROM budget_windows w WHERE w.id = ANY (${idList(ids)})`);
  for (const r of rows) out.set(r.id, { id: r.id, limit: Number(r.limit_amount), spent: Number(r.spent), held: Number(r.held), idle: Number(r.idle) });
  return out;
}
