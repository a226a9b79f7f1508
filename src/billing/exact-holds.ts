/**
 * Exact holds: one hold row per request or video job, taken by one conditional statement. The
 * engine uses them for accounts too poor (or too quiet) for a lease, and video jobs always do (the
 * hold must outlive the process). Closing a hold is a settlement (settle-batch.ts).
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../db/index.ts";
import { insufficientQuota } from "../errors.ts";
import { accountNotFound, getBalance } from "./credits.ts";
import { randomId } from "../ids.ts";
import { budgetExceeded, StaleBudgets, type RefusedWindow } from "./budget-refusal.ts";
import { idList } from "./window-statements.ts";

export interface Hold {
  id: string;
  accountId: string;
  amount: number;
  ref: string;
}

/** What an exact hold reserves in besides the balance: budget windows, as of a budgets version. */
export interface HoldWindows {
  /** the windows the request counts in (their current periods) */
  windows: readonly RefusedWindow[];
  /** accounts.budgets_version the windows were read at; a different one makes the hold fail with StaleBudgets */
  version: number;
  /** the engine's clock (unix ms), for Retry-After */
  now: number;
}

/**
 * Reserve `amount` if the account has it available and every window in `budget` can take it. One
 * statement: the account row and the windows are locked (in that order), checked, and updated
 * together or not at all; Postgres re-reads the locked rows, so concurrent holds cannot overspend.
 * `expiresAt` null means the hold lives until its owner settles or releases it (a video job).
 * Throws 402 insufficient_quota (the balance) or budget_exceeded (the tightest window that cannot
 * take it), or StaleBudgets when the account's budgets changed since `budget.version`.
 */
export async function hold(tx: Tx, input: { accountId: string; amount: number; ref: string; reason: string; expiresAt: Date | null; budget?: HoldWindows | null }): Promise<Hold> {
  const { accountId, amount, ref, reason, expiresAt } = input;
  if (!Number.isSafeInteger(amount) || amount < 0) throw new Error(`hold amount must be a non-negative integer, got ${amount}`);
  const id = randomId("hold");
  const kind = expiresAt ? "request" : "job";
  const b = input.budget ?? null;
  const ids = b ? b.windows.map((w) => w.id) : [];
  if (ids.length === 0 && b === null) return plainHold(tx, { id, accountId, amount, ref, reason, expiresAt, kind });
  const rows = await query<{ id: string | null; fresh: boolean; funds: boolean; available: number; short: string | null }>(tx, sql`
    WITH acc AS (
      SELECT id, balance, held, budgets_version FROM accounts WHERE id = ${accountId} FOR UPDATE
    ), win AS (
      -- the scalar subquery runs first (an InitPlan): the account is locked before any window
      SELECT id, limit_amount, spent, held FROM budget_windows
      WHERE id = ANY (${idList(ids)}) AND (SELECT count(*) FROM acc) >= 0 ORDER BY id FOR UPDATE
    ), ok AS (
      SELECT acc.id, acc.held, acc.balance - acc.held AS available,
        acc.budgets_version = ${b?.version ?? 0} AS fresh,
        acc.balance - acc.held >= ${amount} AS funds,
        (SELECT count(*) FROM win WHERE limit_amount - spent - held >= ${amount}) = ${ids.length} AS room
      FROM acc
    ), a AS (
      UPDATE accounts SET held = ok.held + ${amount} FROM ok WHERE accounts.id = ok.id AND ok.fresh AND ok.funds AND ok.room RETURNING accounts.id
    ), wu AS (
      UPDATE budget_windows SET held = win.held + ${amount} FROM win, a WHERE budget_windows.id = win.id
    ), h AS (
      INSERT INTO holds (id, account_id, ref, kind, amount, expires_at, windows)
      SELECT ${id}, a.id, ${ref}, ${kind}, ${amount}, ${expiresAt?.toISOString() ?? null}::timestamptz, ${ids.length ? idList(ids) : null} FROM a
      RETURNING id
    ), l AS (
      INSERT INTO ledger (account_id, kind, amount, held_change, hold_id, ref, reason)
      SELECT ${accountId}, 'hold', 0, ${amount}, h.id, ${ref}, ${reason} FROM h
    )
    SELECT (SELECT id FROM h) AS id, ok.fresh, ok.funds, ok.available::float8 AS available,
      (SELECT json_agg(json_build_object('id', id, 'left', limit_amount - spent - held))::text FROM win WHERE limit_amount - spent - held < ${amount}) AS short
    FROM ok`);
  const r = rows[0];
  if (!r) throw accountNotFound(accountId);
  if (r.id) return { id, accountId, amount, ref };
  if (!r.fresh) throw new StaleBudgets(accountId);
  // the tightest pot that cannot take it decides
  const short = (r.short ? (JSON.parse(r.short) as Array<{ id: string; left: number }>) : []).map((s) => ({ ...s, left: Number(s.left) })).sort((x, y) => x.left - y.left)[0];
  const available = Number(r.available);
  if (short && (r.funds || short.left <= available)) return refuseWindow(b!, short, amount);
  throw insufficientQuota(amount, available);
}

function refuseWindow(b: HoldWindows, short: { id: string; left: number }, amount: number): never {
  const w = b.windows.find((x) => x.id === short.id)!;
  throw budgetExceeded(w, amount, short.left, b.now);
}

/** The hold of a caller that knows no budgets (tests, tools): the balance only, as before windows existed. */
async function plainHold(tx: Tx, h: { id: string; accountId: string; amount: number; ref: string; reason: string; expiresAt: Date | null; kind: string }): Promise<Hold> {
  const { id, accountId, amount, ref, reason, expiresAt, kind } = h;
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
      RETURNING holds.id, holds.account_id, due.amount, holds.ref, holds.kind, holds.windows
    ), per_account AS (
      SELECT account_id, sum(amount) AS total FROM h GROUP BY account_id
    ), locked AS (
      -- Accounts are locked in id order: every instance runs a sweeper, and two sweepers updating
      -- overlapping accounts in hash order deadlocked (15 of 40 concurrent sweeps failed with 40P01).
      SELECT a.id, a.held, p.total FROM accounts a JOIN per_account p ON p.account_id = a.id ORDER BY a.id FOR UPDATE OF a
    ), a AS (
      -- locked.held, not accounts.held: the locked version is the newest (see settle-batch.ts)
      UPDATE accounts SET held = locked.held - locked.total FROM locked WHERE accounts.id = locked.id
    ), per_window AS (
      SELECT w, sum(amount) AS total FROM (SELECT unnest(windows) AS w, amount FROM h WHERE windows IS NOT NULL) x GROUP BY w
    ), wl AS (
      -- budget windows after the accounts (the lock order of every billing statement)
      SELECT bw.id, bw.held, p.total FROM budget_windows bw JOIN per_window p ON p.w = bw.id WHERE (SELECT count(*) FROM locked) >= 0 ORDER BY bw.id FOR UPDATE OF bw
    ), wu AS (
      UPDATE budget_windows SET held = wl.held - wl.total FROM wl WHERE budget_windows.id = wl.id
    ), l AS (
      INSERT INTO ledger (account_id, kind, amount, held_change, hold_id, ref, reason)
      SELECT account_id, CASE WHEN kind = 'lease' THEN 'lease_return' ELSE 'release' END, 0, -amount, id, ref,
        CASE WHEN kind = 'lease' THEN 'lease expired: its instance stopped renewing it' ELSE 'hold expired: owner request never finished' END
      FROM h WHERE kind <> 'lease' OR amount > 0
    )
    SELECT id FROM h`);
  return rows.length;
}

/** One hold of a holdMany group. */
export interface GroupHold {
  accountId: string;
  amount: number;
  ref: string;
  reason: string;
  expiresAt: Date;
  budget: HoldWindows;
}

/**
 * Many request holds in ONE statement (a batch's lines: group commit), so their accounts' rows are
 * locked for one statement, not for a round trip per hold. A hold is taken when the group's holds
 * up to it (in order, whether taken or not) fit its account's available credit and each of its
 * budget windows, at the budgets version it was read at: a conservative prefix, so the group never
 * overspends. Returns the hold id of each taken one (null: not taken, e.g. short of credit, or
 * stale budgets): the caller asks `hold()` for that one alone, which takes it or answers exactly
 * why not (402, budget_exceeded, StaleBudgets).
 */
export async function holdMany(tx: Tx, holds: readonly GroupHold[]): Promise<Array<string | null>> {
  if (holds.length === 0) return [];
  for (const h of holds) if (!Number.isSafeInteger(h.amount) || h.amount < 0) throw new Error(`hold amount must be a non-negative integer, got ${h.amount}`);
  const items = holds.map((h, i) => ({ i, id: randomId("hold"), a: h.accountId, x: h.amount, r: h.ref, why: h.reason, exp: h.expiresAt.toISOString(), w: h.budget.windows.map((w) => w.id), v: h.budget.version }));
  const rows = await query<{ id: string }>(tx, sql`
    WITH b AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(items)}::jsonb) AS b(i int, id text, a text, x bigint, r text, why text, exp timestamptz, w text[], v int)
    ), acc AS (
      -- = ANY (ARRAY(...)): an index scan; IN (SELECT ...) over b (estimated at 100 rows) read every account (settle-batch.ts's hl)
      SELECT id, balance, held, budgets_version FROM accounts WHERE id = ANY (ARRAY(SELECT a FROM b)) ORDER BY id FOR UPDATE
    ), win AS (
      -- the scalar subquery runs first (an InitPlan): the accounts are locked before any window
      SELECT id, limit_amount, spent, held FROM budget_windows
      WHERE id = ANY (ARRAY(SELECT unnest(w) FROM b)) AND (SELECT count(*) FROM acc) >= 0 ORDER BY id FOR UPDATE
    ), bw AS (
      -- each hold in each of its windows, with the sum of the group's holds up to it in that window
      SELECT b.i, u.w, sum(b.x) OVER (PARTITION BY u.w ORDER BY b.i) AS cum FROM b CROSS JOIN LATERAL unnest(b.w) AS u(w)
    ), ok AS MATERIALIZED (
      SELECT b.* FROM b JOIN acc ON acc.id = b.a
      WHERE acc.budgets_version = b.v
        AND (SELECT sum(b2.x) FROM b b2 WHERE b2.a = b.a AND b2.i <= b.i) <= acc.balance - acc.held
        AND NOT EXISTS (SELECT 1 FROM bw LEFT JOIN win ON win.id = bw.w WHERE bw.i = b.i AND (win.id IS NULL OR bw.cum > win.limit_amount - win.spent - win.held))
    ), au AS (
      UPDATE accounts SET held = acc.held + t.s FROM acc JOIN (SELECT a, sum(x) AS s FROM ok GROUP BY a) t ON t.a = acc.id WHERE accounts.id = acc.id
    ), wu AS (
      UPDATE budget_windows SET held = win.held + t.s
      FROM win JOIN (SELECT u.w, sum(ok.x) AS s FROM ok CROSS JOIN LATERAL unnest(ok.w) AS u(w) GROUP BY u.w) t ON t.w = win.id
      WHERE budget_windows.id = win.id
    ), h AS (
      INSERT INTO holds (id, account_id, ref, kind, amount, expires_at, windows)
      SELECT id, a, r, 'request', x, exp, CASE WHEN cardinality(w) > 0 THEN w END FROM ok
      RETURNING id
    ), l AS (
      INSERT INTO ledger (account_id, kind, amount, held_change, hold_id, ref, reason)
      SELECT a, 'hold', 0, x, id, r, why FROM ok
    )
    SELECT id FROM h`);
  const taken = new Set(rows.map((r) => r.id));
  return items.map((it) => (taken.has(it.id) ? it.id : null));
}
