/**
 * Grants, operator adjustments and balance reads. Each is one statement (data-modifying CTEs), so
 * it is atomic on its own and cheap inside a caller's transaction.
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../db/index.ts";
import { ApiError } from "../errors.ts";

export interface Balance {
  balance: number;
  held: number;
  available: number;
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

/**
 * Signed correction by an operator. Refused if it would take the balance below what is held
 * (credit leased ahead by instances counts as held: see billing-engine.md).
 */
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

/** The account row as the database has it: `held` includes credit leased ahead by instances (operator view). */
export async function getBalance(tx: Tx, accountId: string): Promise<Balance> {
  const rows = await query<{ balance: number; held: number }>(tx, sql`SELECT balance::float8 AS balance, held::float8 AS held FROM accounts WHERE id = ${accountId}`);
  if (!rows[0]) throw accountNotFound(accountId);
  const balance = Number(rows[0].balance), held = Number(rows[0].held);
  return { balance, held, available: balance - held };
}

export interface OperatorBalance extends Balance {
  /** part of `held` that instances reserved ahead (leases) and have not promised to a request yet */
  leasedIdle: number;
  /** open leases on the account (one per instance using it) */
  leases: number;
}

/**
 * What a client sees: `held` is the worst case of its own requests in flight (exact holds, video
 * jobs, and what each lease has in flight as its owner last published), not the credit an instance
 * reserved ahead; that idle part is spendable, so it is in `available`.
 */
export async function clientBalance(tx: Tx, accountId: string): Promise<OperatorBalance> {
  const rows = await query<{ balance: number; held: number; idle: number; leases: number }>(tx, sql`
    SELECT a.balance::float8 AS balance, a.held::float8 AS held, COALESCE(l.idle, 0)::float8 AS idle, COALESCE(l.n, 0)::int AS leases
    FROM accounts a LEFT JOIN LATERAL (
      SELECT sum(amount - LEAST(in_flight, amount)) AS idle, count(*) AS n FROM holds WHERE account_id = a.id AND state = 'open' AND kind = 'lease'
    ) l ON true
    WHERE a.id = ${accountId}`);
  const r = rows[0];
  if (!r) throw accountNotFound(accountId);
  const balance = Number(r.balance), leasedIdle = Number(r.idle), held = Number(r.held) - leasedIdle;
  return { balance, held, available: balance - held, leasedIdle, leases: Number(r.leases) };
}

/** Per account: the idle part of the credit leased ahead by instances, and how many leases are open. */
export async function leasedIdle(tx: Tx, accountIds: string[]): Promise<Map<string, { idle: number; leases: number }>> {
  const out = new Map<string, { idle: number; leases: number }>();
  if (accountIds.length === 0) return out;
  const rows = await query<{ account_id: string; idle: number; n: number }>(tx, sql`
    SELECT account_id, sum(amount - LEAST(in_flight, amount))::float8 AS idle, count(*)::int AS n FROM holds
    WHERE account_id IN ${sql.raw(`(${accountIds.map((a) => `'${a.replace(/'/g, "''")}'`).join(",")})`)} AND state = 'open' AND kind = 'lease'
    GROUP BY account_id`);
  for (const r of rows) out.set(r.account_id, { idle: Number(r.idle), leases: Number(r.n) });
  return out;
}

export function accountNotFound(id: string) {
  return new ApiError(404, "not_found_error", `No account '${id}'.`, { code: "account_not_found" });
}
