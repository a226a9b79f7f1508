/**
 * The one statement that moves a request's or job's money: settle (charge) or release any number of
 * them at once, write their usage rows and ledger rows, take what they used from their hold or
 * lease, and renew this instance's leases. A batch of 200 settlements costs one round trip and one
 * commit instead of 200 (see docs/billing-engine.md for the measurements).
 *
 * Exactly once: a settlement whose `ref` already has a usage row did nothing before and does
 * nothing now, so a batch may be replayed (a retry after a lost connection, a journal at restart).
 * Two settlements of one exact hold racing each other are serialised by the hold's row lock and the
 * loser sees it closed; two replays of a leased one collide on the unique indexes (usage_ref_uniq,
 * ledger_ref_charge_uniq): the loser fails with 23505 as a whole and is retried (then it finds the rows).
 *
 * Money, per settlement, in batch order:
 *  - from its hold: an exact hold pays min(actual, hold) and gives the rest back; a lease pays the
 *    part its owner says it covers (`cover`), never more than the lease still reserves;
 *  - the rest (usage above the hold, or a hold or lease already swept because its owner was presumed
 *    dead) comes from the account's available credit as far as it goes, never below zero, never
 *    into other holds; what cannot be collected is a `shortfall` ledger row.
 *
 * Lock order, as everywhere in billing: holds (by id), then accounts (by id).
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../db/index.ts";
import { insertUsageFrom, USAGE_JSON_COLUMNS, usageFromJson, usageJson, type UsageFacts } from "../usage/record-usage.ts";

export interface Settlement {
  /** the exact hold or lease that reserved the credit (null: none, charge from available credit) */
  holdId: string | null;
  mode: "settle" | "release";
  /** micro-dollars to charge (0 for a release) */
  actual: number;
  /** lease only: the part of `actual` the owner takes from the lease (<= actual) */
  cover: number;
  /** ledger reason */
  reason: string;
  /** the usage row; its accountId and ref are the settlement's */
  usage: UsageFacts;
}

export interface SettlementResult {
  ref: string;
  /** micro-dollars charged */
  charged: number;
  /** usage that could not be collected (balance exhausted) */
  shortfall: number;
  /** micro-dollars an exact hold gave back */
  released: number;
  /** its hold or lease was still open (false: swept before, so the charge came from available credit) */
  fromHold: boolean;
}

export interface LeaseBeat {
  id: string;
  /** worst case of the requests the lease has in flight now (published for the client's `held`) */
  inFlight: number;
}

export interface LeaseState {
  id: string;
  /** what the lease reserves now, after this batch */
  amount: number;
  /** another instance asked for its idle credit back */
  returnRequested: boolean;
  /** the account's budgets changed since it was opened: approve nothing more from it */
  stale: boolean;
}

export interface BatchResult {
  /** settlements this batch applied (the others had already been applied: nothing happened) */
  applied: SettlementResult[];
  /** leases of the batch that are still open; a beat lease missing here was closed (swept) */
  leases: LeaseState[];
  /** budget thresholds the batch's charges crossed (rows now in budget_alerts, to be sent as webhooks) */
  alerts: number;
}

/**
 * A settlement as the batch statement reads it, JSON without its batch index: the usage row's short
 * keys (usageJson) and the money's. Made once per settlement, when it is queued: the journal line is
 * this text and the batch joins these texts, instead of a JSON.stringify of the settlement object for
 * the journal and another for the batch (on the chat bench, 1.7 % + 0.6 % of the CPU profile).
 */
export type SettlementEntry = string;

/** null when `actual` is not a non-negative safe integer: such a settlement fails in its batch, as a bug must. */
export function settlementEntry(s: Settlement): SettlementEntry | null {
  if (!Number.isSafeInteger(s.actual) || s.actual < 0) return null;
  return JSON.stringify({ ...usageJson(s.usage), h: s.holdId, m: s.mode, x: s.actual, c: Math.max(0, Math.min(s.cover, s.actual)), why: s.reason });
}

/** The settlement of an entry (a journal line read back). Throws when it is not one. */
export function settlementOfEntry(line: string): Settlement {
  const j = JSON.parse(line);
  if (typeof j !== "object" || j === null || typeof j.r !== "string" || typeof j.a !== "string" || typeof j.x !== "number") throw new Error("not a settlement entry");
  return { holdId: j.h, mode: j.m, actual: j.x, cover: j.c, reason: j.why, usage: usageFromJson(j) };
}

/** `settlements`: each a Settlement, or its entry (settlementEntry) already made. */
export async function settleBatch(tx: Tx, settlements: ReadonlyArray<Settlement | SettlementEntry>, beats: LeaseBeat[] = [], leaseTtlMs = 0): Promise<BatchResult> {
  const parts = settlements.map((s, i) => {
    const entry = typeof s === "string" ? s : settlementEntry(s);
    if (entry === null) throw new Error(`settlement of ${(s as Settlement).usage.ref}: actual must be a non-negative integer, got ${(s as Settlement).actual}`);
    return `{"i":${i},${entry.slice(1)}`;
  });
  const entries = `[${parts.join(",")}]`;
  const leases = JSON.stringify(beats.map((b) => ({ id: b.id, f: b.inFlight })));
  const rows = await query<{ t: "e" | "l" | "a"; id: string; n: number; s: number; v: number; o: boolean }>(tx, sql`
    WITH b AS (
      SELECT * FROM json_to_recordset(${entries}::json) AS b(i int, h text, m text, x bigint, c bigint, why text, ${USAGE_JSON_COLUMNS})
    ), z AS (
      SELECT * FROM json_to_recordset(${leases}::json) AS z(id text, f bigint)
    ), fresh AS (
      -- the refs already written, found through usage_ref_uniq: = ANY (ARRAY(...)) as for the holds
      -- below. NOT EXISTS let the planner (b estimated at 100 rows) hash all of usage_records in every
      -- batch while the table was under ~25,000 rows: 3.7 ms of 7 for 79 settlements over 12,000 rows
      SELECT DISTINCT ON (r) * FROM b
      WHERE r <> ALL (ARRAY(SELECT u.ref FROM usage_records u WHERE u.ref = ANY (ARRAY(SELECT r FROM b))))
      ORDER BY r, i
    ), hl AS (
      SELECT id, kind, state, amount, charged, in_flight, expires_at, windows, budgets_version FROM holds
      -- = ANY (ARRAY(...)), not IN (SELECT ...): the CTEs are estimated at 100 rows, so for a table of
      -- a few thousand holds IN made a hash join over a sequential scan of all of them, in every
      -- settlement batch (3,708 rows read for 56 settlements while a batch ran); ANY is an index scan
      WHERE id = ANY (ARRAY(SELECT h FROM fresh WHERE h IS NOT NULL UNION SELECT id FROM z))
      ORDER BY id FOR UPDATE
    ), acc AS (
      -- the scalar subquery runs first (an InitPlan): every hold is locked before any account
      SELECT id, balance, held FROM accounts
      WHERE id = ANY (ARRAY(SELECT a FROM fresh)) AND (SELECT count(*) FROM hl) >= 0
      ORDER BY id FOR UPDATE
    ), wl AS (
      -- budget windows of the settled holds and leases, after the accounts (the lock order of every billing statement)
      SELECT id, budget_id, limit_amount, spent, held FROM budget_windows
      -- (= ANY (ARRAY(...)) as for the holds: windows are kept, one per budget and period, and IN read them all)
      WHERE id = ANY (ARRAY(SELECT unnest(hl.windows) FROM hl WHERE hl.id IN (SELECT h FROM fresh))) AND (SELECT count(*) FROM acc) >= 0
      ORDER BY id FOR UPDATE
    ), cov AS (
      SELECT f.*, hl.kind AS hk, COALESCE(hl.amount, 0) AS ha, COALESCE(hl.state = 'open', false) AS ho, hl.windows AS hw,
        CASE WHEN hl.state IS DISTINCT FROM 'open' THEN 0
          WHEN hl.kind = 'lease' THEN GREATEST(0, LEAST(f.c, hl.amount - COALESCE(sum(f.c) OVER (PARTITION BY f.h ORDER BY f.i ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)))
          ELSE LEAST(f.x, hl.amount) END AS cv
      FROM fresh f LEFT JOIN hl ON hl.id = f.h
      -- an exact hold closed by a settlement was this very ref's (one hold per ref), settled by a
      -- statement that committed while we waited for the lock: nothing to do (only 'expired' ones,
      -- swept, are charged again, from available credit)
      WHERE hl.id IS NULL OR hl.kind = 'lease' OR hl.state IN ('open', 'expired')
    ), back AS (
      -- closing exact holds give back what they did not use before anything is taken from available credit
      SELECT a, sum(CASE WHEN ho AND hk <> 'lease' THEN ha - cv ELSE 0 END) AS freed FROM cov GROUP BY a
    ), cw AS (
      -- each settlement in each window it counts in: what it asks beyond its reservation, what it frees
      SELECT i, unnest(hw) AS w, x - cv AS ext, CASE WHEN ho AND hk <> 'lease' THEN ha - cv ELSE 0 END AS fr FROM cov WHERE hw IS NOT NULL
    ), wback AS (
      SELECT w, sum(fr) AS freed FROM cw GROUP BY w
    ), wroom AS (
      -- what each window can still give a settlement's usage above its reservation, in batch order
      -- (like the account's available credit below: never past the limit, never into other reservations)
      SELECT cw.i, min(wl.limit_amount - wl.spent - wl.held + wback.freed - cw.before) AS room FROM (
        SELECT cw.*, COALESCE(sum(ext) OVER (PARTITION BY w ORDER BY i ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS before FROM cw
      ) cw JOIN wl ON wl.id = cw.w JOIN wback ON wback.w = cw.w GROUP BY cw.i
    ), calc0 AS MATERIALIZED (
      -- From acc's values, not accounts.*: acc locked the newest row version, but an UPDATE's own
      -- read can be the statement snapshot's older one (a grant committed just before the lock made
      -- a settle of balance+1 compute -1 in 92 of 200 races).
      SELECT cov.*, cv + GREATEST(0, LEAST(x - cv, acc.balance - acc.held + back.freed
          - COALESCE(sum(x - cv) OVER (PARTITION BY cov.a ORDER BY cov.i ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0))) AS chg0
      FROM cov JOIN acc ON acc.id = cov.a JOIN back ON back.a = cov.a
    ), calc AS (
      -- then no further than any of its windows allows (max(0, min(a, w)) = min(max(0, a), max(0, w))).
      -- Two steps, the first materialized: joined in one, the planner (every CTE estimated at one row)
      -- looped over the accounts for each settlement, 10× slower for 500 settlements of 128 accounts.
      -- In the order the account's window function gave calc0 (account, then batch order): usage and
      -- ledger rows take their ids in it, and a join may not keep it (a hash join did: a request's
      -- usage row got an id below the one before it, and /v1/usage showed them the other way round).
      SELECT calc0.*, cv + LEAST(chg0 - cv, GREATEST(0, COALESCE(wroom.room, chg0 - cv))) AS chg
      FROM calc0 LEFT JOIN wroom ON wroom.i = calc0.i ORDER BY calc0.a, calc0.i
    ), u AS (
      ${insertUsageFrom(sql`calc`, sql`chg`, sql`hw`)}
    ), l AS (
      INSERT INTO ledger (account_id, kind, amount, held_change, hold_id, ref, reason)
      SELECT a, 'charge', -chg, -cv, CASE WHEN ho THEN h END, r, why FROM calc WHERE chg > 0
      UNION ALL
      SELECT a, 'release', 0, -(ha - cv), h, r, why FROM calc WHERE ho AND hk <> 'lease' AND ha > cv
      UNION ALL
      SELECT a, 'shortfall', 0, 0, CASE WHEN ho THEN h END, r, 'shortfall: ' || (x - chg) || ' micro-dollars of usage not collected (balance or budget exhausted); ' || why
      FROM calc WHERE x > chg
    ), hs AS (
      SELECT h, max(m) AS m, sum(cv) AS cv, sum(chg) AS chg FROM calc WHERE ho GROUP BY h
    ), hu AS (
      UPDATE holds SET
        state = CASE WHEN hl.kind = 'lease' THEN 'open' WHEN hs.m = 'release' THEN 'released' ELSE 'settled' END,
        amount = CASE WHEN hl.kind = 'lease' THEN hl.amount - COALESCE(hs.cv, 0) ELSE hl.amount END,
        charged = CASE WHEN hl.kind = 'lease' THEN COALESCE(hl.charged, 0) + COALESCE(hs.chg, 0) ELSE hs.chg END,
        closed_at = CASE WHEN hl.kind = 'lease' THEN NULL ELSE now() END,
        in_flight = COALESCE(z.f, hl.in_flight),
        expires_at = CASE WHEN z.id IS NOT NULL THEN now() + ${leaseTtlMs} * interval '1 millisecond' ELSE hl.expires_at END
      FROM hl LEFT JOIN hs ON hs.h = hl.id LEFT JOIN z ON z.id = hl.id
      WHERE holds.id = hl.id AND hl.state = 'open' AND (hs.h IS NOT NULL OR z.id IS NOT NULL)
      RETURNING holds.id, holds.kind, holds.amount, holds.account_id, holds.budgets_version, holds.return_requested_at IS NOT NULL AS asked
    ), au AS (
      UPDATE accounts SET balance = acc.balance - t.chg, held = acc.held - t.held
      FROM acc JOIN (SELECT a, sum(chg) AS chg, sum(CASE WHEN ho AND hk <> 'lease' THEN ha ELSE cv END) AS held FROM calc GROUP BY a) t ON t.a = acc.id
      WHERE accounts.id = acc.id
    ), wt AS (
      SELECT w, sum(chg) AS chg, sum(CASE WHEN ho AND hk <> 'lease' THEN ha ELSE cv END) AS held
      FROM (SELECT calc.*, unnest(hw) AS w FROM calc WHERE hw IS NOT NULL) c GROUP BY w
    ), wu AS (
      UPDATE budget_windows SET spent = wl.spent + wt.chg, held = wl.held - wt.held FROM wl JOIN wt ON wt.w = wl.id
      WHERE budget_windows.id = wl.id
      RETURNING budget_windows.id, budget_windows.budget_id, budget_windows.account_id, wl.spent AS before, budget_windows.spent AS after, budget_windows.limit_amount
    ), al AS (
      -- a threshold the window's spending crossed, once per window and threshold ever (the primary
      -- key), in the transaction of the charge that crossed it: its webhook is sent exactly once
      INSERT INTO budget_alerts (window_id, threshold, account_id, budget_id, spent, limit_amount)
      SELECT wu.id, th, wu.account_id, wu.budget_id, wu.after, wu.limit_amount FROM wu JOIN budgets bu ON bu.id = wu.budget_id, unnest(bu.thresholds) AS th
      WHERE wu.limit_amount > 0 AND wu.before * 100 < wu.limit_amount * th AND wu.after * 100 >= wu.limit_amount * th
      ON CONFLICT DO NOTHING
      RETURNING window_id
    )
    SELECT 'e' AS t, r AS id, chg::float8 AS n, (x - chg)::float8 AS s, (CASE WHEN ho AND hk <> 'lease' THEN ha - cv ELSE 0 END)::float8 AS v, ho AS o FROM calc
    UNION ALL
    SELECT 'l', hu.id, hu.amount::float8, (hu.budgets_version IS NOT NULL AND hu.budgets_version <> ac.budgets_version)::int::float8, asked::int::float8, true
    FROM hu JOIN accounts ac ON ac.id = hu.account_id WHERE hu.kind = 'lease'
    UNION ALL
    SELECT 'a', '', count(*)::float8, 0, 0, true FROM al HAVING count(*) > 0`);
  const out: BatchResult = { applied: [], leases: [], alerts: 0 };
  for (const r of rows) {
    if (r.t === "e") out.applied.push({ ref: r.id, charged: Number(r.n), shortfall: Number(r.s), released: Number(r.v), fromHold: r.o === true });
    else if (r.t === "l") out.leases.push({ id: r.id, amount: Number(r.n), returnRequested: Number(r.v) === 1, stale: Number(r.s) === 1 });
    else out.alerts = Number(r.n);
  }
  return out;
}

export interface SingleSettlement {
  /** false when the request or job had already been settled or released: nothing happened */
  applied: boolean;
  /** its hold was still open (false: swept, or none) */
  fromHold: boolean;
  charged: number;
  shortfall: number;
  released: number;
}

/** One settlement on its own (a video job's, inside the transaction of its final status). */
export async function settleOne(tx: Tx, s: Settlement): Promise<SingleSettlement> {
  const r = (await settleBatch(tx, [s])).applied[0];
  return r ? { applied: true, fromHold: r.fromHold, charged: r.charged, shortfall: r.shortfall, released: r.released } : { applied: false, fromHold: false, charged: 0, shortfall: 0, released: 0 };
}
