/**
 * Budgets as the admin API, the CLI and `/v1/account` see them: setting a key's or an account's
 * set of budgets (a PUT replaces the set), and reading each budget with its current window's
 * figures. Enforcement is the credit engine's (windows.ts, exact-holds.ts, leases, settle-batch.ts).
 *
 * A PUT keeps a budget that is listed again with the same period, timezone and models (its windows
 * keep what was spent: changing a limit does not reset the month) and updates its limit and
 * thresholds; it removes the others (no new request counts in them; what they reserved still
 * settles in them) and creates the new ones, whose first window counts from the moment they are
 * set. It bumps the account's budgets version, so every instance re-reads the windows before its
 * next reservation and its leases stop approving at their next heartbeat.
 */
import { sql } from "drizzle-orm";
import { query, type Db, type Tx } from "../db/index.ts";
import { ApiError } from "../errors.ts";
import { randomId } from "../ids.ts";
import { accountNotFound } from "./credits.ts";
import { currentWindows, idList, PERIODS, windowFigures, type Period, type WindowInfo } from "./window-statements.ts";

export const DEFAULT_THRESHOLDS = [80, 100];
export const MAX_BUDGETS = 20;

export interface BudgetSpec {
  period: Period;
  /** micro-dollars per window */
  limit: number;
  /** IANA timezone (default UTC) */
  timezone?: string;
  /** model ids it counts (absent or null: every model) */
  models?: string[] | null;
  /** percents of the limit that send `budget.threshold_reached` (default 80 and 100) */
  thresholds?: number[];
}

/** A budget with its current window, as the API shows it (micro-dollars). */
export interface BudgetView {
  id: string;
  scope: "account" | "key";
  key_id: string | null;
  period: Period;
  limit: number;
  timezone: string;
  models: string[] | null;
  thresholds: number[];
  window: {
    id: string;
    starts_at: string;
    /** null for lifetime */
    resets_at: string | null;
    spent: number;
    /** worst cases of the requests in flight counting in it */
    reserved: number;
    /** what requests may still reserve: limit − spent − reserved */
    remaining: number;
    /** thresholds reached in this window */
    alerts: Array<{ threshold: number; reached_at: string }>;
  };
}

const bad = (message: string, param: string) => new ApiError(400, "invalid_request_error", message, { param, code: "invalid_budget" });

/** The IANA name of a timezone as Postgres and Intl both spell it, or a 400. */
function canonicalZone(tz: string, param: string): string {
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: tz }).resolvedOptions().timeZone;
  } catch {
    throw bad(`'${tz.slice(0, 64)}' is not an IANA timezone (e.g. UTC, Europe/Paris, America/New_York).`, param);
  }
}

/** Check and normalise a PUT's budgets (models sorted, timezone canonical, thresholds sorted). */
export function normaliseBudgets(specs: BudgetSpec[]): Required<BudgetSpec>[] {
  if (specs.length > MAX_BUDGETS) throw bad(`At most ${MAX_BUDGETS} budgets per key or account.`, "budgets");
  const seen = new Set<string>();
  return specs.map((b, i) => {
    const at = `budgets[${i}]`;
    if (!PERIODS.includes(b.period)) throw bad(`${at}.period must be one of ${PERIODS.join(", ")}.`, `${at}.period`);
    if (!Number.isSafeInteger(b.limit) || b.limit < 0) throw bad(`${at}.limit must be a non-negative integer of micro-dollars.`, `${at}.limit`);
    const timezone = canonicalZone(b.timezone ?? "UTC", `${at}.timezone`);
    const models = b.models?.length ? [...new Set(b.models)].sort() : null;
    const thresholds = [...new Set(b.thresholds ?? DEFAULT_THRESHOLDS)].sort((x, y) => x - y);
    if (thresholds.some((t) => !Number.isInteger(t) || t < 1 || t > 100)) throw bad(`${at}.thresholds must be whole percents from 1 to 100.`, `${at}.thresholds`);
    const identity = `${b.period}|${b.period === "lifetime" ? "" : timezone}|${models?.join(",") ?? ""}`;
    if (seen.has(identity)) throw bad(`${at} repeats a budget with the same period, timezone and models; give each one once.`, at);
    seen.add(identity);
    return { period: b.period, limit: b.limit, timezone, models, thresholds };
  });
}

/**
 * Replace the budgets of an account (`keyId` null) or of one of its keys, as of `at` (the engine's
 * clock: windows not yet over take the new limit). One transaction; returns the budgets as set.
 */
export async function setBudgets(db: Db, owner: { accountId: string; keyId: string | null }, specs: BudgetSpec[], at: number): Promise<BudgetView[]> {
  const wanted = normaliseBudgets(specs);
  try {
    return await db.transaction((tx) => setBudgetsIn(tx, owner, wanted, at));
  } catch (e) {
    throw budgetError(e);
  }
}

/** a budget as the audit log keeps it: its settings, not its window's figures */
export const budgetSpecOf = (b: BudgetView) => ({ id: b.id, scope: b.scope, key_id: b.key_id, period: b.period, limit: b.limit, timezone: b.timezone, models: b.models, thresholds: b.thresholds });

/** A timezone Postgres does not know (Intl did) is the client's mistake: 400. */
export function budgetError(e: unknown): unknown {
  return String((e as { code?: unknown })?.code) === "22023" ? bad(`A timezone is not known to the database: ${(e as Error).message}`, "budgets") : e;
}

const identity = (b: { period: string; timezone: string; models: string[] | null }) => `${b.period}|${b.period === "lifetime" ? "" : b.timezone}|${b.models?.join(",") ?? ""}`;

/** setBudgets inside the caller's transaction (a key created with its budgets); `wanted` from normaliseBudgets. */
export async function setBudgetsIn(tx: Tx, owner: { accountId: string; keyId: string | null }, wanted: Required<BudgetSpec>[], at: number): Promise<BudgetView[]> {
  // the account row first (the lock order of billing): bumping the version makes every cached window set and lease stale
  const acc = await query(tx, sql`UPDATE accounts SET budgets_version = budgets_version + 1 WHERE id = ${owner.accountId} RETURNING id`);
  if (!acc[0]) throw accountNotFound(owner.accountId);
  const keyCond = owner.keyId === null ? sql`key_id IS NULL` : sql`key_id = ${owner.keyId}`;
  const existing = await query<{ id: string; period: string; timezone: string; models: unknown }>(tx, sql`
    SELECT id, period, timezone, models FROM budgets WHERE account_id = ${owner.accountId} AND ${keyCond} AND removed_at IS NULL ORDER BY id FOR UPDATE`);
  const byIdentity = new Map(existing.map((e) => [identity({ period: e.period, timezone: e.timezone, models: normaliseArray(e.models) }), e.id]));
  const iso = new Date(at).toISOString();
  for (const w of wanted) {
    const id = byIdentity.get(identity(w));
    if (id) {
      byIdentity.delete(identity(w));
      await query(tx, sql`UPDATE budgets SET limit_amount = ${w.limit}, thresholds = string_to_array(${w.thresholds.join(",")}, ',')::int[] WHERE id = ${id}`);
      await query(tx, sql`UPDATE budget_windows SET limit_amount = ${w.limit} WHERE budget_id = ${id} AND (ends_at IS NULL OR ends_at > ${iso}::timestamptz)`);
    } else {
      await query(tx, sql`
        INSERT INTO budgets (id, account_id, key_id, period, limit_amount, timezone, models, thresholds)
        VALUES (${randomId("bud")}, ${owner.accountId}, ${owner.keyId}, ${w.period}, ${w.limit}, ${w.timezone},
          ${w.models ? idList(w.models) : null}, string_to_array(${w.thresholds.join(",")}, ',')::int[])`);
    }
  }
  for (const id of byIdentity.values()) await query(tx, sql`UPDATE budgets SET removed_at = now() WHERE id = ${id}`);
  // the new windows exist (and a timezone Postgres does not know fails here, rolling it all back)
  await currentWindows(tx, owner.accountId, at);
  return budgetViews(tx, owner.accountId, owner.keyId === null ? { account: true } : { keyId: owner.keyId }, at);
}

/**
 * The budgets of an account (`account`), of one key (`keyId`), or both, each with its current
 * window at `at`: spent, reserved (worst cases in flight; credit instances reserved ahead and no
 * request uses yet is not counted), remaining, when it resets and the thresholds reached in it.
 */
export async function budgetViews(tx: Tx, accountId: string, which: { account?: boolean; keyId?: string | null }, at: number): Promise<BudgetView[]> {
  const set = await currentWindows(tx, accountId, at);
  const windows = set.windows.filter((w) => (w.keyId === null ? which.account === true : which.keyId !== undefined && w.keyId === which.keyId));
  const figures = await windowFigures(tx, windows.map((w) => w.id));
  const alerts = windows.length
    ? await query<{ window_id: string; threshold: number; reached_at: Date | string }>(tx, sql`
        SELECT window_id, threshold, reached_at FROM budget_alerts WHERE window_id = ANY (${idList(windows.map((w) => w.id))}) ORDER BY window_id, threshold`)
    : [];
  return windows.map((w) => view(w, figures.get(w.id), alerts.filter((a) => a.window_id === w.id)));
}

function view(w: WindowInfo, f: { spent: number; held: number; idle: number } | undefined, alerts: Array<{ threshold: number; reached_at: Date | string }>): BudgetView {
  const spent = f?.spent ?? 0;
  const reserved = Math.max(0, (f?.held ?? 0) - (f?.idle ?? 0));
  return {
    id: w.budgetId, scope: w.keyId ? "key" : "account", key_id: w.keyId, period: w.period, limit: w.limit, timezone: w.timezone, models: w.models, thresholds: w.thresholds,
    window: {
      id: w.id, starts_at: new Date(w.startsAt).toISOString(), resets_at: w.endsAt === null ? null : new Date(w.endsAt).toISOString(),
      spent, reserved, remaining: Math.max(0, w.limit - spent - reserved),
      alerts: alerts.map((a) => ({ threshold: Number(a.threshold), reached_at: new Date(a.reached_at).toISOString() })),
    },
  };
}

/** A rotated key's budgets go to its successor, windows and all: rotating is no way around a limit. */
export async function moveKeyBudgets(tx: Tx, accountId: string, fromKeyId: string, toKeyId: string): Promise<void> {
  await query(tx, sql`UPDATE accounts SET budgets_version = budgets_version + 1 WHERE id = ${accountId}`);
  await query(tx, sql`UPDATE budgets SET key_id = ${toKeyId} WHERE key_id = ${fromKeyId} AND removed_at IS NULL`);
}

function normaliseArray(v: unknown): string[] | null {
  if (v === null || v === undefined) return null;
  const a = Array.isArray(v) ? v.map(String) : String(v).replace(/^\{|\}$/g, "").split(",").filter(Boolean);
  return a.length ? a.sort() : null;
}
