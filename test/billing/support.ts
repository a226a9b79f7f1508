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
import { createAccount } from "../../src/modules/accounts/service.ts";
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
 * held amount, held equals the open holds, 0 <= held <= balance; and per hold, at most one
 * hold/charge/release/shortfall row, and a closed hold's rows give back exactly what it held.
 */
export async function expectInvariants(db: Tx, accountIds: string[]) {
  for (const id of accountIds) {
    const s = await accountState(db, id);
    expect({ id, ledgerAmount: s.ledgerAmount, ledgerHeld: s.ledgerHeld, openHolds: s.openHolds }).toEqual({ id, ledgerAmount: s.balance, ledgerHeld: s.held, openHolds: s.held });
    expect(s.balance).toBeGreaterThanOrEqual(0);
    expect(s.held).toBeGreaterThanOrEqual(0);
    expect(s.held).toBeLessThanOrEqual(s.balance);
  }
  const perHold = await query<{ hold_id: string; state: string; amount: number; charged: number | null; kinds: string[]; held_sum: number; charge_sum: number }>(db, sql`
    SELECT h.id AS hold_id, h.state, h.amount::float8 AS amount, h.charged::float8 AS charged,
      array_agg(l.kind ORDER BY l.id) AS kinds,
      sum(l.held_change)::float8 AS held_sum, (-sum(l.amount))::float8 AS charge_sum
    FROM holds h JOIN ledger l ON l.hold_id = h.id
    WHERE h.account_id IN ${sql.raw(`(${accountIds.map((a) => `'${a}'`).join(",")})`)}
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
