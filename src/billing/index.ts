/**
 * The billing module: the only code that changes balances. Every operation is one SQL statement
 * (data-modifying CTEs), so it is atomic on its own and cheap inside a caller's transaction:
 * pass the transaction a job's status change runs in, and money moves in that same transaction.
 *
 * Invariants (checked by tests): per account sum(ledger.amount) == balance,
 * sum(ledger.held_change) == held == sum(open holds), 0 <= held <= balance.
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../db/index.ts";
import { ApiError, insufficientQuota } from "../errors.ts";
import { randomId } from "./ids.ts";
import { usageInsert, type UsageFacts } from "../usage/record-usage.ts";

export { randomId } from "./ids.ts";

export interface Hold {
  id: string;
  accountId: string;
  amount: number;
  ref: string;
}

export interface Settlement {
  /** false when the hold was already settled or released: nothing happened */
  applied: boolean;
  charged: number;
  /** part of `actual` that could not be charged without a negative balance (recorded as a ledger row) */
  shortfall: number;
  released: number;
}

export async function grant(tx: Tx, accountId: string, amount: number, reason: string, ref: string | null = null): Promise<number> {
  if (!Number.isSafeInteger(amount) || amount <= 0) throw new ApiError(400, "invalid_request_error", "amount must be a positive integer number of micro-dollars", { param: "amount", code: "invalid_amount" });
  const rows = await query<{ balance: number }>(tx, sql`
    WITH a AS (
      UPDATE accounts SET balance = balance + ${amount} WHERE id = ${accountId} RETURNING balance
    ), l AS (
      INSERT INTO ledger (account_id, kind, amount, held_change, ref, reason)
      SELECT ${accountId}, 'grant', ${amount}, 0, ${ref}, ${reason} FROM a
    )
    SELECT balance::float8 AS balance FROM a`);
  if (!rows[0]) throw accountNotFound(accountId);
  return Number(rows[0].balance);
}

/** Signed correction by an operator. Refused if it would take the balance below what is held. */
export async function adjust(tx: Tx, accountId: string, amount: number, reason: string, ref: string | null = null): Promise<number> {
  if (!Number.isSafeInteger(amount) || amount === 0) throw new ApiError(400, "invalid_request_error", "amount must be a non-zero integer number of micro-dollars", { param: "amount", code: "invalid_amount" });
  const rows = await query<{ balance: number }>(tx, sql`
    WITH a AS (
      UPDATE accounts SET balance = balance + ${amount} WHERE id = ${accountId} AND balance + ${amount} >= held RETURNING balance
    ), l AS (
      INSERT INTO ledger (account_id, kind, amount, held_change, ref, reason)
      SELECT ${accountId}, 'adjustment', ${amount}, 0, ${ref}, ${reason} FROM a
    )
    SELECT balance::float8 AS balance FROM a`);
  if (rows[0]) return Number(rows[0].balance);
  await getBalance(tx, accountId); // throws 404 if missing
  throw new ApiError(400, "invalid_request_error", "adjustment would take the balance below zero or below the credits currently held", { param: "amount", code: "invalid_amount" });
}

/**
 * Reserve `amount` if available >= amount. The conditional UPDATE is the whole check: Postgres
 * re-evaluates `balance - held >= amount` on the locked row, so concurrent holds cannot overspend.
 * `expiresAt` null means the hold lives until its owner settles or releases it (video jobs).
 */
export async function hold(tx: Tx, input: { accountId: string; amount: number; ref: string; reason: string; expiresAt: Date | null }): Promise<Hold> {
  const { accountId, amount, ref, reason, expiresAt } = input;
  if (!Number.isSafeInteger(amount) || amount < 0) throw new Error(`hold amount must be a non-negative integer, got ${amount}`);
  const id = randomId("hold");
  const rows = await query<{ id: string }>(tx, sql`
    WITH a AS (
      UPDATE accounts SET held = held + ${amount} WHERE id = ${accountId} AND balance - held >= ${amount} RETURNING id
    ), h AS (
      INSERT INTO holds (id, account_id, ref, amount, expires_at)
      SELECT ${id}, a.id, ${ref}, ${amount}, ${expiresAt?.toISOString() ?? null}::timestamptz FROM a
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
 * A usage row to write in the same statement as the settle or release (its cost is what the
 * statement charged). One autocommitted statement holds the account's row lock only for itself:
 * a settle and a separate usage INSERT in a transaction kept the lock across a client round trip,
 * and requests on one hot account queued behind it.
 */
export interface WithUsage {
  usage?: UsageFacts;
}

/**
 * Charge `actual` against the hold and release the rest, once. If `actual` exceeds the hold, the
 * extra is taken from the account's available credits as far as they go (never below zero, never
 * into other holds); what cannot be charged is written as a `shortfall` row and not collected.
 */
export async function settle(tx: Tx, holdId: string, actual: number, reason: string, opts: WithUsage = {}): Promise<Settlement> {
  if (!Number.isSafeInteger(actual) || actual < 0) throw new Error(`settle amount must be a non-negative integer, got ${actual}`);
  // Lock order is hold, then account, as in release and the sweeper. Locking the account first
  // (as this statement once did) deadlocked against a concurrent release of the same hold:
  // 39 of 40 settle-vs-release races failed with 40P01 after the 1 s deadlock_timeout.
  const rows = await query<{ amount: number; charged: number }>(tx, sql`
    WITH hl AS (
      SELECT id, account_id FROM holds WHERE id = ${holdId} AND state = 'open' FOR UPDATE
    ), acc AS (
      SELECT a.id, a.balance, a.held, a.balance - a.held AS avail FROM accounts a JOIN hl ON a.id = hl.account_id
      FOR UPDATE OF a
    ), h AS (
      UPDATE holds SET state = 'settled', closed_at = now(), charged = LEAST(${actual}::bigint, holds.amount + acc.avail)
      FROM acc WHERE holds.id = ${holdId} AND holds.state = 'open'
      RETURNING holds.id, holds.account_id, holds.amount, holds.charged, holds.ref
    ), a AS (
      -- From acc's values, not accounts.*: acc locked the newest row version, but this UPDATE's
      -- own read can be the statement snapshot's, older one. With accounts.balance here, a grant
      -- committed just before acc's lock made a settle of balance+1 compute -1 (92 of 200 races).
      UPDATE accounts SET balance = acc.balance - h.charged, held = acc.held - h.amount
      FROM h JOIN acc ON acc.id = h.account_id WHERE accounts.id = h.account_id
    ), l AS (
      INSERT INTO ledger (account_id, kind, amount, held_change, hold_id, ref, reason)
      SELECT account_id, 'charge', -charged, -LEAST(charged, amount), id, ref, ${reason} FROM h WHERE charged > 0
      UNION ALL
      SELECT account_id, 'release', 0, -(amount - charged), id, ref, ${reason} FROM h WHERE amount > charged
      UNION ALL
      SELECT account_id, 'shortfall', 0, 0, id, ref, 'shortfall: ' || (${actual}::bigint - charged) || ' micro-dollars of usage not collected (balance exhausted); ' || ${reason}
      FROM h WHERE ${actual}::bigint > charged
    )${opts.usage ? sql`, u AS (${usageInsert(opts.usage, sql`COALESCE((SELECT charged FROM h), 0)`)})` : sql``}
    SELECT amount::float8 AS amount, charged::float8 AS charged FROM h`);
  const r = rows[0];
  if (!r) return { applied: false, charged: 0, shortfall: 0, released: 0 };
  const charged = Number(r.charged), amount = Number(r.amount);
  return { applied: true, charged, shortfall: actual - charged, released: Math.max(0, amount - charged) };
}

/** Release the whole hold, once. Returns false when it was already closed. */
export async function release(tx: Tx, holdId: string, reason: string, opts: WithUsage = {}): Promise<boolean> {
  const rows = await query<{ id: string }>(tx, sql`
    WITH h AS (
      UPDATE holds SET state = 'released', closed_at = now(), charged = 0
      WHERE id = ${holdId} AND state = 'open'
      RETURNING id, account_id, amount, ref
    ), a AS (
      UPDATE accounts SET held = accounts.held - h.amount FROM h WHERE accounts.id = h.account_id
    ), l AS (
      INSERT INTO ledger (account_id, kind, amount, held_change, hold_id, ref, reason)
      SELECT account_id, 'release', 0, -amount, id, ref, ${reason} FROM h
    )${opts.usage ? sql`, u AS (${usageInsert(opts.usage, sql`0`)})` : sql``}
    SELECT id FROM h`);
  return rows.length > 0;
}

/** Release expired holds of synchronous requests whose owner died. Returns how many were released. */
export async function sweepExpiredHolds(tx: Tx, limit = 500): Promise<number> {
  const rows = await query<{ id: string }>(tx, sql`
    WITH due AS (
      SELECT id FROM holds WHERE state = 'open' AND expires_at IS NOT NULL AND expires_at < now()
      ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
    ), h AS (
      UPDATE holds SET state = 'released', closed_at = now(), charged = 0
      FROM due WHERE holds.id = due.id
      RETURNING holds.id, holds.account_id, holds.amount, holds.ref
    ), per_account AS (
      SELECT account_id, sum(amount) AS total FROM h GROUP BY account_id
    ), locked AS (
      -- Accounts are locked in id order: every instance runs a sweeper, and two sweepers updating
      -- overlapping accounts in hash order deadlocked (15 of 40 concurrent sweeps failed with 40P01).
      SELECT a.id, a.held, p.total FROM accounts a JOIN per_account p ON p.account_id = a.id ORDER BY a.id FOR UPDATE OF a
    ), a AS (
      -- locked.held, not accounts.held: see settle (the locked version is the newest)
      UPDATE accounts SET held = locked.held - locked.total FROM locked WHERE accounts.id = locked.id
    ), l AS (
      INSERT INTO ledger (account_id, kind, amount, held_change, hold_id, ref, reason)
      SELECT account_id, 'release', 0, -amount, id, ref, 'hold expired: owner request never finished' FROM h
    )
    SELECT id FROM h`);
  return rows.length;
}

export interface Balance {
  balance: number;
  held: number;
  available: number;
}

export async function getBalance(tx: Tx, accountId: string): Promise<Balance> {
  const rows = await query<{ balance: number; held: number }>(tx, sql`SELECT balance::float8 AS balance, held::float8 AS held FROM accounts WHERE id = ${accountId}`);
  if (!rows[0]) throw accountNotFound(accountId);
  const balance = Number(rows[0].balance), held = Number(rows[0].held);
  return { balance, held, available: balance - held };
}

function accountNotFound(id: string) {
  return new ApiError(404, "not_found_error", `No account '${id}'.`, { code: "account_not_found" });
}
