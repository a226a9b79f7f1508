/**
 * Exact holds: one hold row per request or video job, taken by one conditional statement. The
 * engine uses them for accounts too poor (or too quiet) for a lease, and video jobs always do (the
 * hold must outlive the process). Closing a hold is a settlement (settle-batch.ts).
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../db/index.ts";
import { insufficientQuota } from "../errors.ts";
import { getBalance } from "./credits.ts";
import { randomId } from "../ids.ts";

export interface Hold {
  id: string;
  accountId: string;
  amount: number;
  ref: string;
}

/**
 * Reserve `amount` if available >= amount. The conditional UPDATE is the whole check: Postgres
 * re-evaluates `balance - held >= amount` on the locked row, so concurrent holds cannot overspend.
 * `expiresAt` null means the hold lives until its owner settles or releases it (a video job).
 */
export async function hold(tx: Tx, input: { accountId: string; amount: number; ref: string; reason: string; expiresAt: Date | null }): Promise<Hold> {
  const { accountId, amount, ref, reason, expiresAt } = input;
  if (!Number.isSafeInteger(amount) || amount < 0) throw new Error(`hold amount must be a non-negative integer, got ${amount}`);
  const id = randomId("hold");
  const kind = expiresAt ? "request" : "job";
  const rows = await query<{ id: string }>(tx, sql`
    WITH a AS (
      UPDATE accounts SET held = held + ${amount} WHERE id = ${accountId} AND balance - held >= ${amount} RETURNING id
    ), h AS (
      INSERT INTO holds (id, account_id, ref, kind, amount, expires_at)
      SELECT ${id}, a.id, ${ref}, ${kind}, ${amount}, ${expiresAt?.toISOString() ?? null}::timestamptz FROM a
      RETURNING id
    ), l AS (
      INSERT INTO ledger (account_id, kind, amount, held_change, hold_id, ref, reason)
      SELECT ${accountId}, 'hold', 0, ${amount}, h.id, ${ref}, ${reason} FROM h
    )
    SELECT id FROM h`);
  if (rows[0]) return { id, accountId, amount, ref };
  const bal = await getBalance(tx, accountId);
  throw insufficientQuota(amount, bal.available);
}

/**
 * Release expired holds and leases whose owner stopped: a request that never finished (its process
 * died), or a lease whose instance stopped renewing it. Returns how many were released.
 * A charge that arrives later (a journal replayed at restart) is taken from available credit.
 */
export async function sweepExpiredHolds(tx: Tx, limit = 500): Promise<number> {
  const rows = await query<{ id: string }>(tx, sql`
    WITH due AS (
      SELECT id, amount FROM holds WHERE state = 'open' AND expires_at IS NOT NULL AND expires_at < now()
      ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
    ), h AS (
      UPDATE holds SET state = 'expired', closed_at = now(),
        charged = CASE WHEN holds.kind = 'lease' THEN holds.charged ELSE 0 END,
        amount = CASE WHEN holds.kind = 'lease' THEN 0 ELSE holds.amount END
      FROM due WHERE holds.id = due.id
      RETURNING holds.id, holds.account_id, due.amount, holds.ref, holds.kind
    ), per_account AS (
      SELECT account_id, sum(amount) AS total FROM h GROUP BY account_id
    ), locked AS (
      -- Accounts are locked in id order: every instance runs a sweeper, and two sweepers updating
      -- overlapping accounts in hash order deadlocked (15 of 40 concurrent sweeps failed with 40P01).
      SELECT a.id, a.held, p.total FROM accounts a JOIN per_account p ON p.account_id = a.id ORDER BY a.id FOR UPDATE OF a
    ), a AS (
      -- locked.held, not accounts.held: the locked version is the newest (see settle-batch.ts)
      UPDATE accounts SET held = locked.held - locked.total FROM locked WHERE accounts.id = locked.id
    ), l AS (
      INSERT INTO ledger (account_id, kind, amount, held_change, hold_id, ref, reason)
      SELECT account_id, CASE WHEN kind = 'lease' THEN 'lease_return' ELSE 'release' END, 0, -amount, id, ref,
        CASE WHEN kind = 'lease' THEN 'lease expired: its instance stopped renewing it' ELSE 'hold expired: owner request never finished' END
      FROM h WHERE kind <> 'lease' OR amount > 0
    )
    SELECT id FROM h`);
  return rows.length;
}
