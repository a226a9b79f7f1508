/**
 * Billing test support: a migrated database (fresh Postgres database or a PGlite directory),
 * funded accounts, and one invariant check every billing test ends with.
 */
import { expect } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import * as billing from "../../src/billing/index.ts";
import { migrate, openDatabase, query, type Database, type Tx } from "../../src/db/index.ts";
import { createAccount } from "../../src/accounts/accounts.ts";
import { createTestDatabase, dropDatabase } from "../support/harness.ts";

export interface BillingDb extends Database {
  /** DATABASE_URL of the fresh Postgres database (null for PGlite) */
  url: string | null;
  /** close the connection and drop the database / remove the data directory */
  dispose(): Promise<void>;
}

export async function openPostgres(poolSize = 20): Promise<BillingDb> {
  const url = await createTestDatabase();
  const database = await openDatabase({ databaseUrl: url, dataDir: "/nonexistent", poolSize });
  await migrate(database.db);
  return { ...database, url, dispose: async () => (await database.close(), await dropDatabase(url)) };
}

export async function openPglite(): Promise<BillingDb> {
  const dataDir = mkdtempSync(join(tmpdir(), "reelay-billing-pglite-"));
  const database = await openDatabase({ databaseUrl: null, dataDir });
  await migrate(database.db);
  return { ...database, url: null, dispose: async () => (await database.close(), rmSync(dataDir, { recursive: true, force: true })) };
}

/** The usage row every settlement writes (a test's settlement stands for a chat request). */
export const usageFor = (h: Pick<billing.Hold, "accountId" | "ref">) => ({ accountId: h.accountId, ref: h.ref, kind: "chat" as const, model: "test-model", status: 200 });

/**
 * Settle an exact hold on its own (the statement every settlement uses, with one settlement). Like
 * the engine, it retries once when a racing settlement of the same ref won the unique index.
 */
export async function settle(db: Tx, h: billing.Hold, actual: number, reason = "test settle"): Promise<billing.SingleSettlement> {
  const s = { holdId: h.id, mode: "settle" as const, actual, cover: 0, reason, usage: usageFor(h) };
  return billing.settleOne(db, s).catch((e) => (String(e?.code) === "23505" ? billing.settleOne(db, s) : Promise.reject(e)));
}

/** Release an exact hold; true when this call released it (it was still open and not yet settled). */
export async function release(db: Tx, h: billing.Hold, reason = "test release"): Promise<boolean> {
  const s = { holdId: h.id, mode: "release" as const, actual: 0, cover: 0, reason, usage: { ...usageFor(h), status: 502 } };
  const r = await billing.settleOne(db, s).catch((e) => (String(e?.code) === "23505" ? billing.settleOne(db, s) : Promise.reject(e)));
  return r.applied && r.fromHold;
}

export async function fundedAccount(db: Tx, credits: number): Promise<string> {
  const acct = await createAccount(db, "billing-test");
  if (credits > 0) await billing.grant(db, acct.id, credits, "test funding");
  return acct.id;
}

export interface AccountState {
  balance: number;
  held: number;
  ledgerAmount: number;
  ledgerHeld: number;
  openHolds: number;
}

export async function accountState(db: Tx, accountId: string): Promise<AccountState> {
  const [r] = await query<Record<keyof AccountState, number>>(db, sql`
    SELECT a.balance::float8 AS "balance", a.held::float8 AS "held",
      (SELECT coalesce(sum(amount), 0)::float8 FROM ledger WHERE account_id = a.id) AS "ledgerAmount",
      (SELECT coalesce(sum(held_change), 0)::float8 FROM ledger WHERE account_id = a.id) AS "ledgerHeld",
      (SELECT coalesce(sum(amount), 0)::float8 FROM holds WHERE account_id = a.id AND state = 'open') AS "openHolds"
    FROM accounts a WHERE a.id = ${accountId}`);
  if (!r) throw new Error(`no account ${accountId}`);
  return { balance: Number(r.balance), held: Number(r.held), ledgerAmount: Number(r.ledgerAmount), ledgerHeld: Number(r.ledgerHeld), openHolds: Number(r.openHolds) };
}

export interface LedgerRow {
  kind: string;
  amount: number;
  held_change: number;
  hold_id: string | null;
  reason: string;
}

export async function ledgerOf(db: Tx, accountId: string): Promise<LedgerRow[]> {
  const rows = await query<LedgerRow>(db, sql`
    SELECT kind, amount::float8 AS amount, held_change::float8 AS held_change, hold_id, reason FROM ledger WHERE account_id = ${accountId} ORDER BY id`);
  return rows.map((r) => ({ ...r, amount: Number(r.amount), held_change: Number(r.held_change) }));
}

export async function holdRows(db: Tx, holdId: string): Promise<LedgerRow[]> {
  const rows = await query<LedgerRow>(db, sql`
    SELECT kind, amount::float8 AS amount, held_change::float8 AS held_change, hold_id, reason FROM ledger WHERE hold_id = ${holdId} ORDER BY id`);
  return rows.map((r) => ({ ...r, amount: Number(r.amount), held_change: Number(r.held_change) }));
}

/**
 * The invariants of the billing model, per account: the ledger sums to the balance and to the
 * held amount, held equals the open holds and leases, 0 <= held <= balance; per request hold, at
 * most one hold/charge/release/shortfall row, and a closed hold's rows give back exactly what it
 * held; per lease, its rows sum to what it still reserves (0 once closed) and its charges to
 * `charged`; per ref, at most one charge, one shortfall and one usage row, the usage row's cost
 * being the charge.
 */
export async function expectInvariants(db: Tx, accountIds: string[]) {
  for (const id of accountIds) {
    const s = await accountState(db, id);
    expect({ id, ledgerAmount: s.ledgerAmount, ledgerHeld: s.ledgerHeld, openHolds: s.openHolds }).toEqual({ id, ledgerAmount: s.balance, ledgerHeld: s.held, openHolds: s.held });
    expect(s.balance).toBeGreaterThanOrEqual(0);
    expect(s.held).toBeGreaterThanOrEqual(0);
    expect(s.held).toBeLessThanOrEqual(s.balance);
  }
  const ids = sql.raw(`(${accountIds.map((a) => `'${a}'`).join(",")})`);
  const perRef = await query<{ ref: string; charges: number; shortfalls: number; usages: number; charged: number; cost: number | null }>(db, sql`
    SELECT l.ref, count(*) FILTER (WHERE l.kind = 'charge')::int AS charges, count(*) FILTER (WHERE l.kind = 'shortfall')::int AS shortfalls,
      (SELECT count(*) FROM usage_records u WHERE u.ref = l.ref)::int AS usages,
      (-sum(l.amount) FILTER (WHERE l.kind = 'charge'))::float8 AS charged, (SELECT max(cost) FROM usage_records u WHERE u.ref = l.ref)::float8 AS cost
    FROM ledger l WHERE l.account_id IN ${ids} AND l.kind IN ('charge', 'shortfall') GROUP BY l.ref`);
  for (const r of perRef) {
    expect({ ref: r.ref, charges: r.charges <= 1, shortfalls: r.shortfalls <= 1, usages: r.usages }).toEqual({ ref: r.ref, charges: true, shortfalls: true, usages: 1 });
    if (r.charges === 1) expect({ ref: r.ref, cost: Number(r.cost) }).toEqual({ ref: r.ref, cost: Number(r.charged) });
  }
  const leases = await query<{ id: string; state: string; amount: number; charged: number; held_sum: number; charge_sum: number }>(db, sql`
    SELECT h.id, h.state, h.amount::float8 AS amount, COALESCE(h.charged, 0)::float8 AS charged,
      COALESCE(sum(l.held_change), 0)::float8 AS held_sum, COALESCE(-sum(l.amount) FILTER (WHERE l.kind = 'charge'), 0)::float8 AS charge_sum
    FROM holds h LEFT JOIN ledger l ON l.hold_id = h.id
    WHERE h.kind = 'lease' AND h.account_id IN ${ids} GROUP BY h.id`);
  for (const l of leases) {
    expect({ lease: l.id, held: Number(l.held_sum), charged: Number(l.charge_sum) }).toEqual({ lease: l.id, held: l.state === "open" ? Number(l.amount) : 0, charged: Number(l.charged) });
    if (l.state !== "open") expect(Number(l.amount)).toBe(0);
  }
  const perHold = await query<{ hold_id: string; state: string; amount: number; charged: number | null; kinds: string[]; held_sum: number; charge_sum: number }>(db, sql`
    SELECT h.id AS hold_id, h.state, h.amount::float8 AS amount, h.charged::float8 AS charged,
      array_agg(l.kind ORDER BY l.id) AS kinds,
      sum(l.held_change)::float8 AS held_sum, (-sum(l.amount))::float8 AS charge_sum
    FROM holds h JOIN ledger l ON l.hold_id = h.id
    WHERE h.kind <> 'lease' AND h.account_id IN ${ids}
    GROUP BY h.id`);
  for (const h of perHold) {
    const kinds = h.kinds;
    for (const k of ["hold", "charge", "release", "shortfall"]) expect({ hold: h.hold_id, kind: k, n: kinds.filter((x) => x === k).length <= 1 }).toEqual({ hold: h.hold_id, kind: k, n: true });
    expect(kinds[0]).toBe("hold");
    if (h.state === "open") {
      expect(kinds).toEqual(["hold"]);
    } else {
      // a closed hold gives back everything it held, and charges exactly holds.charged
      expect(Number(h.held_sum)).toBe(0);
      expect(Number(h.charge_sum)).toBe(h.state === "settled" ? Number(h.charged) : 0);
    }
  }
}

export interface WindowRow {
  id: string;
  limit: number;
  spent: number;
  held: number;
  /** Σ amount of the open holds and leases reserving in it */
  openHolds: number;
  /** Σ cost of the usage rows whose charge counted in it */
  usageCost: number;
}

export async function windowRows(db: Tx, accountIds: string[]): Promise<WindowRow[]> {
  const ids = sql.raw(`(${accountIds.map((a) => `'${a}'`).join(",")})`);
  const rows = await query<{ id: string; limit_amount: number; spent: number; held: number; open_holds: number; usage_cost: number }>(db, sql`
    SELECT w.id, w.limit_amount::float8 AS limit_amount, w.spent::float8 AS spent, w.held::float8 AS held,
      (SELECT coalesce(sum(h.amount), 0) FROM holds h WHERE h.state = 'open' AND w.id = ANY (h.windows))::float8 AS open_holds,
      (SELECT coalesce(sum(u.cost), 0) FROM usage_records u WHERE u.account_id = w.account_id AND w.id = ANY (u.budget_windows))::float8 AS usage_cost
    FROM budget_windows w WHERE w.account_id IN ${ids} ORDER BY w.id`);
  return rows.map((r) => ({ id: r.id, limit: Number(r.limit_amount), spent: Number(r.spent), held: Number(r.held), openHolds: Number(r.open_holds), usageCost: Number(r.usage_cost) }));
}

/**
 * The invariants of budget windows, per window: what is charged and reserved in it never passes its
 * limit, its held amount is the open holds and leases that list it, and its spent amount is the
 * cost of the usage rows whose charge counted in it.
 */
export async function expectWindowInvariants(db: Tx, accountIds: string[]) {
  for (const w of await windowRows(db, accountIds)) {
    expect({ window: w.id, held: w.held, spent: w.spent, within: w.spent + w.held <= w.limit, nonNegative: w.spent >= 0 && w.held >= 0 })
      .toEqual({ window: w.id, held: w.openHolds, spent: w.usageCost, within: true, nonNegative: true });
  }
}

/** Resolves once a session of this database waits on a lock (a forced interleaving's step); throws after ~5 s. */
export async function someoneWaitsOnALock(db: Tx, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const [row] = await query<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    if (row!.n > 0) return;
    await Bun.sleep(10);
  }
  throw new Error(`${what} never waited on a lock`);
}

/** The account's budgets version (what a GroupHold is read at). */
export async function budgetsVersionOf(db: Tx, accountId: string): Promise<number> {
  return Number((await query<{ v: number }>(db, sql`SELECT budgets_version AS v FROM accounts WHERE id = ${accountId}`))[0]!.v);
}
