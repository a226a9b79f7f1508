/**
 * Asking other instances for their idle lease credit (requestLeaseReturns) locks the leases in id
 * order, the order every settlement locks holds in (settle-batch.ts). It used to lock them in the
 * order a plain UPDATE found them: against a settlement holding one lease and wanting the next,
 * Postgres found a deadlock and the request that asked was answered 500 (seen under 1,000 mixed
 * requests on two instances). Here the interleaving is forced: a transaction holds the lower lease
 * the way a settlement does, the ask starts and is seen waiting on a lock, then the transaction takes
 * the higher lease — which the old statement had already locked.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { openLease, requestLeaseReturns } from "../../src/billing/lease-statements.ts";
import { query } from "../../src/db/index.ts";
import { expectInvariants, fundedAccount, openPostgres, someoneWaitsOnALock, type BillingDb } from "./support.ts";

let pg: BillingDb;
beforeAll(async () => {
  pg = await openPostgres(4);
});
afterAll(async () => {
  await pg?.dispose();
});

test("asking for lease returns while a settlement holds one of the leases waits for it instead of deadlocking", async () => {
  const db = pg.db;
  const acct = await fundedAccount(db, 1_000_000);
  // the higher id first, so it is first in the table (the order a plain UPDATE finds rows in)
  const [low, high] = ["lease_a_lockorder", "lease_b_lockorder"];
  for (const id of [high, low]) expect(await openLease(db, { id, accountId: acct, owner: "other-instance", need: 1_000, want: 100_000, sharePermille: 1000, ttlMs: 60_000 })).toBeGreaterThan(0);

  let ask: Promise<number> | null = null;
  const settlement = await db.transaction(async (tx) => {
    await query(tx, sql`SELECT id FROM holds WHERE id = ${low} FOR UPDATE`);
    ask = requestLeaseReturns(db, acct, "this-instance");
    await someoneWaitsOnALock(db, "the ask");
    // the settlement goes on to its next hold, in id order
    const rows = await query<{ id: string }>(tx, sql`SELECT id FROM holds WHERE id = ${high} FOR UPDATE`);
    return rows.map((r) => r.id);
  });
  expect(settlement).toEqual([high]);
  const idle = await ask!;
  const leases = await query<{ id: string; amount: number; asked: boolean }>(db, sql`SELECT id, amount::float8 AS amount, return_requested_at IS NOT NULL AS asked FROM holds WHERE account_id = ${acct} ORDER BY id`);
  expect(leases.map((l) => [l.id, l.asked])).toEqual([[low, true], [high, true]]);
  expect(idle).toBe(leases.reduce((s, l) => s + l.amount, 0));
  await expectInvariants(db, [acct]);
});
