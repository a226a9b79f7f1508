/**
 * Credit leases in the database. A lease is a hold row (kind 'lease') owned by one instance
 * incarnation; it reserves credit the owner approves requests from in memory (engine.ts). Only its
 * owner changes its amount (these statements and settle-batch.ts); the sweeper closes it when the
 * owner stops renewing it. Lock order: the lease row, then the account row.
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../db/index.ts";

export interface LeaseGrant {
  /** the lease is still open */
  alive: boolean;
  /** another instance asked for its idle credit back: nothing was added */
  asked: boolean;
  /** micro-dollars added (0: the account could not spare `need`) */
  added: number;
}

/**
 * Reserve between `need` and `want` micro-dollars, but never more than `sharePermille`/1000 of the
 * account's available credit, so the other instances of a busy account still find some.
 */
export async function openLease(tx: Tx, l: { id: string; accountId: string; owner: string; need: number; want: number; sharePermille: number; ttlMs: number }): Promise<number> {
  const rows = await query<{ amt: number }>(tx, sql`
    WITH acc AS (
      SELECT id, balance, held FROM accounts WHERE id = ${l.accountId} FOR UPDATE
    ), x AS (
      SELECT id, held, LEAST(${l.want}::bigint, (balance - held) * ${l.sharePermille} / 1000) AS amt FROM acc
      WHERE (balance - held) * ${l.sharePermille} / 1000 >= ${l.need}::bigint
    ), au AS (
      UPDATE accounts SET held = x.held + x.amt FROM x WHERE accounts.id = x.id
    ), h AS (
      INSERT INTO holds (id, account_id, ref, kind, amount, owner, in_flight, charged, expires_at)
      SELECT ${l.id}, x.id, ${l.id}, 'lease', x.amt, ${l.owner}, 0, 0, now() + ${l.ttlMs} * interval '1 millisecond' FROM x
      RETURNING id
    ), lg AS (
      INSERT INTO ledger (account_id, kind, amount, held_change, hold_id, ref, reason)
      SELECT x.id, 'lease', 0, x.amt, h.id, h.id, 'credit leased ahead by instance ' || ${l.owner} FROM x, h
    )
    SELECT amt::float8 AS amt FROM x`);
  return rows[0] ? Number(rows[0].amt) : 0;
}

/** Add between `need` and `want` to an open lease (same share cap as openLease), renewing it. */
export async function refillLease(tx: Tx, l: { id: string; accountId: string; need: number; want: number; sharePermille: number; ttlMs: number }): Promise<LeaseGrant> {
  const rows = await query<{ alive: number; asked: number; amt: number | null }>(tx, sql`
    WITH hl AS (
      SELECT id, amount, return_requested_at IS NOT NULL AS asked FROM holds WHERE id = ${l.id} AND state = 'open' FOR UPDATE
    ), acc AS (
      SELECT a.id, a.balance, a.held FROM accounts a, hl WHERE a.id = ${l.accountId} AND NOT hl.asked FOR UPDATE OF a
    ), x AS (
      SELECT acc.id, acc.held, LEAST(${l.want}::bigint, (acc.balance - acc.held) * ${l.sharePermille} / 1000) AS amt FROM acc
      WHERE (acc.balance - acc.held) * ${l.sharePermille} / 1000 >= ${l.need}::bigint
    ), hu AS (
      UPDATE holds SET amount = hl.amount + x.amt, expires_at = now() + ${l.ttlMs} * interval '1 millisecond' FROM hl, x WHERE holds.id = hl.id
    ), au AS (
      UPDATE accounts SET held = x.held + x.amt FROM x WHERE accounts.id = x.id
    ), lg AS (
      INSERT INTO ledger (account_id, kind, amount, held_change, hold_id, ref, reason)
      SELECT x.id, 'lease', 0, x.amt, ${l.id}, ${l.id}, 'lease refilled' FROM x
    )
    SELECT (SELECT count(*) FROM hl)::int AS alive, (SELECT count(*) FROM hl WHERE asked)::int AS asked, (SELECT amt FROM x)::float8 AS amt`);
  const r = rows[0];
  return { alive: Number(r?.alive ?? 0) > 0, asked: Number(r?.asked ?? 0) > 0, added: Number(r?.amt ?? 0) };
}

/**
 * Give `amount` of an open lease back to the account (at most what it reserves), or all of it and
 * close the lease. Clears a pending return request. Returns what was given back, or null when the
 * lease was no longer open (swept).
 */
export async function returnLease(tx: Tx, l: { id: string; amount: number; close: boolean; reason: string }): Promise<number | null> {
  const rows = await query<{ amt: number }>(tx, sql`
    WITH hl AS (
      SELECT id, account_id, amount FROM holds WHERE id = ${l.id} AND state = 'open' FOR UPDATE
    ), acc AS (
      SELECT a.id, a.held FROM accounts a JOIN hl ON a.id = hl.account_id FOR UPDATE OF a
    ), x AS (
      SELECT hl.id, hl.account_id, hl.amount, CASE WHEN ${l.close} THEN hl.amount ELSE LEAST(${l.amount}::bigint, hl.amount) END AS amt FROM hl
    ), hu AS (
      UPDATE holds SET amount = x.amount - x.amt, return_requested_at = NULL,
        state = CASE WHEN ${l.close} THEN 'released' ELSE 'open' END, closed_at = CASE WHEN ${l.close} THEN now() END
      FROM x WHERE holds.id = x.id
    ), au AS (
      UPDATE accounts SET held = acc.held - x.amt FROM acc, x WHERE accounts.id = acc.id
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
 */
export async function requestLeaseReturns(tx: Tx, accountId: string, owner: string): Promise<number> {
  const rows = await query<{ idle: number | null }>(tx, sql`
    WITH r AS (
      UPDATE holds SET return_requested_at = COALESCE(return_requested_at, now())
      WHERE account_id = ${accountId} AND kind = 'lease' AND state = 'open' AND owner <> ${owner}
      RETURNING amount - LEAST(in_flight, amount) AS idle
    )
    SELECT sum(idle)::float8 AS idle FROM r`);
  return Number(rows[0]?.idle ?? 0);
}

/** Open leases of an owner (an earlier incarnation of this instance, found after a crash). */
export async function leasesOf(tx: Tx, owner: string): Promise<string[]> {
  const rows = await query<{ id: string }>(tx, sql`SELECT id FROM holds WHERE kind = 'lease' AND state = 'open' AND owner = ${owner} ORDER BY id`);
  return rows.map((r) => r.id);
}
