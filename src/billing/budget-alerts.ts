/**
 * Threshold alerts of budget windows. The settlement that makes a window's spending cross one of
 * its budget's thresholds inserts the alert row in its own statement (settle-batch.ts: primary key
 * window + threshold, so once per window and threshold, whichever instance, whatever restarts).
 * `claimAlerts` hands the ones not yet sent to the webhook module, inside the transaction that
 * queues their deliveries: the row is marked in that transaction, so each alert is queued once.
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../db/index.ts";
import type { Period } from "./window-statements.ts";

export interface BudgetAlert {
  windowId: string;
  threshold: number;
  accountId: string;
  budgetId: string;
  keyId: string | null;
  period: Period;
  timezone: string;
  models: string[] | null;
  limit: number;
  spent: number;
  windowStartsAt: string;
  resetsAt: string | null;
  reachedAt: string;
}

/** Alerts not yet handed over (oldest first), marked handed over in `tx`; concurrent claimers skip each other's. */
export async function claimAlerts(tx: Tx, limit = 200): Promise<BudgetAlert[]> {
  const rows = await query<{ window_id: string; threshold: number; account_id: string; budget_id: string; key_id: string | null; period: Period; timezone: string; models: unknown; limit_amount: number; spent: number; s: string; e: string | null; reached_at: string }>(tx, sql`
    WITH a AS (
      SELECT window_id, threshold FROM budget_alerts WHERE enqueued_at IS NULL ORDER BY reached_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
    ), m AS (
      UPDATE budget_alerts SET enqueued_at = now() FROM a WHERE budget_alerts.window_id = a.window_id AND budget_alerts.threshold = a.threshold
      RETURNING budget_alerts.*
    )
    SELECT m.window_id, m.threshold, m.account_id, m.budget_id, b.key_id, b.period, b.timezone, b.models, m.limit_amount::float8 AS limit_amount, m.spent::float8 AS spent,
      to_char(w.starts_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS s, to_char(w.ends_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS e,
      to_char(m.reached_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS reached_at
    FROM m JOIN budgets b ON b.id = m.budget_id JOIN budget_windows w ON w.id = m.window_id
    ORDER BY m.reached_at, m.window_id, m.threshold`);
  return rows.map((r) => ({
    windowId: r.window_id, threshold: Number(r.threshold), accountId: r.account_id, budgetId: r.budget_id, keyId: r.key_id, period: r.period, timezone: r.timezone,
    models: Array.isArray(r.models) ? (r.models as string[]) : r.models ? String(r.models).replace(/[{}]/g, "").split(",").filter(Boolean) : null,
    limit: Number(r.limit_amount), spent: Number(r.spent), windowStartsAt: r.s, resetsAt: r.e, reachedAt: r.reached_at,
  }));
}
