/**
 * Credit leases in the database. A lease is a hold row (kind 'lease') owned by one instance
 * incarnation; it reserves credit the owner approves requests from in memory (engine.ts). Only its
 * owner changes its amount (these statements and settle-batch.ts); the sweeper closes it when the
 * owner stops renewing it. A lease may also reserve in budget windows (`holds.windows`): the same
 * amount in each, moved with the account's. Lock order: the lease row, the account row, the windows.
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../db/index.ts";
import { idList } from "./window-statements.ts";

export interface LeaseGrant {
  /** the lease is still open */
  alive: boolean;
  /** another instance asked for its idle credit back: nothing was added */
  asked: boolean;
  /** micro-dollars added (0: the account could not spare `need`) */
  added: number;
  /** the account's budgets changed since the lease was opened: nothing was added; give it back */
  stale: boolean;
}

/**
 * Reserve between `need` and `want` micro-dollars, but never more than `sharePermille`/1000 of the
 * account's available credit, so the other instances of a busy account still find some. With
 * budget `windows`, the lease reserves the same amount in each of them too, capped the same way by
 * what each window has left, and only while the account's budgets are still at `budgetsVersion`
 * (else `stale`: nothing reserved). Returns what it reserved (0: the account or a window could not
 * spare `need`).
 */
export async function openLease(tx: Tx, l: { id: string; accountId: string; owner: string; need: number; want: number; sharePermille: number; ttlMs: number; windows?: readonly string[]; budgetsVersion?: number | null }): Promise<number> {
  return (await openLeaseIn(tx, l)).added;
}

/** openLease, telling a refusal for stale budgets apart. */
export async function openLeaseIn(tx: Tx, l: { id: string; accountId: string; owner: string; need: number; want: number; sharePermille: number; ttlMs: number; windows?: readonly string[]; budgetsVersion?: number | null }): Promise<{ added: number; stale: boolean }> {
  const ids = l.windows ?? [];
  const version = l.budgetsVersion ?? null;
  const rows = await query<{ amt: number | null; stale: boolean }>(tx, sql`
    WITH acc AS (
      SELECT id, balance, held, budgets_version FROM accounts WHERE id = ${l.accountId} FOR UPDATE
    ), win AS (
      SELECT id, limit_amount, spent, held FROM budget_windows WHERE id = ANY (${idList(ids)}) AND (SELECT count(*) FROM acc) >= 0 ORDER BY id FOR UPDATE
    ), cap AS (
      SELECT LEAST((balance - held) * ${l.sharePermille} / 1000, COALESCE((SELECT min((limit_amount - spent - held) * ${l.sharePermille} / 1000) FROM win), (balance - held))) AS c,
        (${version}::int IS NULL OR budgets_version = ${version}::int) AS fresh, (SELECT count(*) FROM win) = ${ids.length} AS complete
      FROM acc
    ), x AS (
      SELECT acc.id, acc.held, LEAST(${l.want}::bigint, cap.c) AS amt FROM acc, cap
      WHERE cap.c >= ${l.need}::bigint AND cap.fresh AND cap.complete
    ), au AS (
      UPDATE accounts SET held = x.held + x.amt FROM x WHERE accounts.id = x.id
    ), wu AS (
      UPDATE budget_windows SET held = win.held + x.amt FROM win, x WHERE budget_windows.id = win.id
    ), h AS (
      INSERT INTO holds (id, account_id, ref, kind, amount, owner, in_flight, charged, expires_at, windows, budgets_version)
      SELECT ${l.id}, x.id, ${l.id}, 'lease', x.amt, ${l.owner}, 0, 0, now() + ${l.ttlMs} * interval '1 millisecond', ${ids.length ? idList(ids) : null}, ${version}::int FROM x
      RETURNING id
    ), lg AS (
      INSERT INTO ledger (account_id, kind, amount, held_change, hold_id, ref, reason)
      SELECT x.id, 'lease', 0, x.amt, h.id, h.id, 'credit leased ahead by instance ' || ${l.owner} FROM x, h
    )
    SELECT (SELECT amt FROM x)::float8 AS amt, NOT COALESCE((SELECT fresh FROM cap), true) AS stale`);
  return { added: Number(rows[0]?.amt ?? 0), stale: rows[0]?.stale === true };
}

/** Add between `need` and `want` to an open lease (same caps as openLease, in its own windows), renewing it. */
export async function refillLease(tx: Tx, l: { id: string; accountId: string; need: number; want: number; sharePermille: number; ttlMs: number }): Promise<LeaseGrant> {
  const rows = await query<{ alive: number; asked: number; stale: number; amt: number | null }>(tx, sql`
    WITH hl AS (
      SELECT id, amount, windows, budgets_version, return_requested_at IS NOT NULL AS asked FROM holds WHERE id = ${l.id} AND state = 'open' FOR UPDATE
    ), acc AS (
      SELECT a.id, a.balance, a.held, a.budgets_version, hl.budgets_version IS NOT NULL AND hl.budgets_version <> a.budgets_version AS stale
      FROM accounts a, hl WHERE a.id = ${l.accountId} AND NOT hl.asked FOR UPDATE OF a
    ), win AS (
      SELECT w.id, w.limit_amount, w.spent, w.held FROM budget_windows w
      WHERE w.id = ANY (COALESCE((SELECT windows FROM hl), '{}'::text[])) AND (SELECT count(*) FROM acc) >= 0 ORDER BY w.id FOR UPDATE OF w
    ), x AS (
      SELECT acc.id, acc.held, LEAST(${l.want}::bigint, (acc.balance - acc.held) * ${l.sharePermille} / 1000, COALESCE((SELECT min((limit_amount - spent - held) * ${l.sharePermille} / 1000) FROM win), ${l.want}::bigint)) AS amt FROM acc
      WHERE NOT acc.stale AND LEAST((acc.balance - acc.held) * ${l.sharePermille} / 1000, COALESCE((SELECT min((limit_amount - spent - held) * ${l.sharePermille} / 1000) FROM win), ${l.need}::bigint)) >= ${l.need}::bigint
    ), hu AS (
      UPDATE holds SET amount = hl.amount + x.amt, expires_at = now() + ${l.ttlMs} * interval '1 millisecond' FROM hl, x WHERE holds.id = hl.id
    ), au AS (
      UPDATE accounts SET held = x.held + x.amt FROM x WHERE accounts.id = x.id
    ), wu AS (
      UPDATE budget_windows SET held = win.held + x.amt FROM win, x WHERE budget_windows.id = win.id
    ), lg AS (
      INSERT INTO ledger (account_id, kind, amount, held_change, hold_id, ref, reason)
      SELECT x.id, 'lease', 0, x.amt, ${l.id}, ${l.id}, 'lease refilled' FROM x
    )
    SELECT (SELECT count(*) FROM hl)::int AS alive, (SELECT count(*) FROM hl WHERE asked)::int AS asked, (SELECT count(*) FROM acc WHERE stale)::int AS stale, (SELECT amt FROM x)::float8 AS amt`);
  const r = rows[0];
  return { alive: Number(r?.alive ?? 0) > 0, asked: Number(r?.asked ?? 0) > 0, stale: Number(r?.stale ?? 0) > 0, added: Number(r?.amt ?? 0) };
}

/**
 * Give `amount` of an open lease back to the account (at most what it reserves), or all of it and
 * close the lease; its windows get the same amount back. Clears a pending return request. Returns
 * what was given back, or null when the lease was no longer open (swept).
 */
export async function returnLease(tx: Tx, l: { id: string; amount: number; close: boolean; reason: string }): Promise<number | null> {
  const rows = await query<{ amt: number }>(tx, sql`
    WITH hl AS (
      SELECT id, account_id, amount, windows FROM holds WHERE id = ${l.id} AND state = 'open' FOR UPDATE
    ), acc AS (
      SELECT a.id, a.held FROM accounts a JOIN hl ON a.id = hl.account_id FOR UPDATE OF a
    ), x AS (
      SELECT hl.id, hl.account_id, hl.amount, CASE WHEN ${l.close} THEN hl.amount ELSE LEAST(${l.amount}::bigint, hl.amount) END AS amt FROM hl
    ), win AS (
      SELECT w.id, w.held FROM budget_windows w
      WHERE w.id = ANY (COALESCE((SELECT windows FROM hl), '{}'::text[])) AND (SELECT count(*) FROM acc) >= 0 ORDER BY w.id FOR UPDATE OF w
    ), hu AS (
      UPDATE holds SET amount = x.amount - x.amt, return_requested_at = NULL,
        state = CASE WHEN ${l.close} THEN 'released' ELSE 'open' END, closed_at = CASE WHEN ${l.close} THEN now() END
      FROM x WHERE holds.id = x.id
    ), au AS (
      UPDATE accounts SET held = acc.held - x.amt FROM acc, x WHERE accounts.id = acc.id
    ), wu AS (
      UPDATE budget_windows SET held = win.held - x.amt FROM win, x WHERE budget_windows.id = win.id
    ), lg AS (
      INSERT INTO ledger (account_id, kind, amount, held_change, hold_id, ref, reason)
      SELECT x.account_id, 'lease_return', 0, -x.amt, x.id, x.id, ${l.reason} FROM x WHERE x.amt > 0
    )
    SELECT amt::float8 AS amt FROM x`);
  return rows[0] ? Number(rows[0].amt) : null;
}

/**
 * Ask every other instance leasing this account to give its idle credit back (they see the flag
 * at their next heartbeat, ~100 ms). Returns the credit they hold idle as last published.
 * The leases are locked in id order first, as settle-batch.ts locks holds: a plain multi-row UPDATE
 * locks them in the order it finds them, and against a settlement of two of those leases it
 * deadlocked (40P01 under 1,000 mixed requests on two instances, answered 500).
 */
export async function requestLeaseReturns(tx: Tx, accountId: string, owner: string): Promise<number> {
  const rows = await query<{ idle: number | null }>(tx, sql`
    WITH l AS (
      SELECT id FROM holds
      WHERE account_id = ${accountId} AND kind = 'lease' AND state = 'open' AND owner <> ${owner}
      ORDER BY id FOR UPDATE
    ), r AS (
      UPDATE holds SET return_requested_at = COALESCE(holds.return_requested_at, now())
      FROM l WHERE holds.id = l.id AND holds.state = 'open'
      RETURNING holds.amount - LEAST(holds.in_flight, holds.amount) AS idle
    )
    SELECT sum(idle)::float8 AS idle FROM r`);
  return Number(rows[0]?.idle ?? 0);
}

/** Open leases of an owner (an earlier incarnation of this instance, found after a crash). */
export async function leasesOf(tx: Tx, owner: string): Promise<string[]> {
  const rows = await query<{ id: string }>(tx, sql`SELECT id FROM holds WHERE kind = 'lease' AND state = 'open' AND owner = ${owner} ORDER BY id`);
  return rows.map((r) => r.id);
}
