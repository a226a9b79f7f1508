import { afterAll, beforeAll, expect, test } from "bun:test";
import * as billing from "../../src/billing/index.ts";
import { openDatabase } from "../../src/db/index.ts";
import { describeEngine, newEngine, request } from "./engine.case.ts";
import { expectInvariants, fundedAccount, ledgerOf, openPostgres, type BillingDb } from "./support.ts";

describeEngine("Postgres", () => openPostgres(20));

let pg: BillingDb;
beforeAll(async () => {
  pg = await openPostgres(8);
}, 60_000);
afterAll(async () => {
  await pg?.dispose();
});

test("an instance that loses its database stops renewing its lease: swept after the TTL; a late charge comes from available credit", async () => {
  const db = pg.db;
  const acct = await fundedAccount(db, 1_000_000);
  const side = await openDatabase({ databaseUrl: pg.url!, dataDir: "/nonexistent", poolSize: 2 });
  const dying = newEngine(side.db, { leaseTtlMs: 1_000 });
  await request(dying, acct, 10_000, 1_000);
  await request(dying, acct, 10_000, 1_000);
  const inflight = await dying.approve({ accountId: acct, ref: "req_orphan", amount: 10_000, reason: "t" });
  expect(inflight.kind).toBe("lease");
  await dying.sync();
  const leaseId = (inflight as { lease: { id: string } }).lease.id;
  await side.close(); // the instance is cut off (or killed): nothing renews its lease any more
  const leased = (await billing.getBalance(db, acct)).held; // (a background refill may have landed just before)
  expect(leased).toBeGreaterThan(10_000);
  await Bun.sleep(1_200);
  expect(await billing.sweepExpiredHolds(db)).toBe(1);
  expect(await billing.getBalance(db, acct)).toEqual({ balance: 998_000, held: 0, available: 998_000 });
  expect((await ledgerOf(db, acct)).at(-1)).toMatchObject({ kind: "lease_return", held_change: -leased, reason: "lease expired: its instance stopped renewing it" });
  // its journal, replayed later, still charges the request that was in flight: once, from available credit
  const late: billing.Settlement = { holdId: leaseId, mode: "settle", actual: 4_000, cover: 4_000, reason: "t", usage: { accountId: acct, ref: "req_orphan", kind: "chat", model: "m", status: 200 } };
  expect((await billing.settleBatch(db, [late])).applied).toEqual([{ ref: "req_orphan", charged: 4_000, shortfall: 0, released: 0, fromHold: false }]);
  expect((await billing.settleBatch(db, [late])).applied).toEqual([]);
  expect(await billing.getBalance(db, acct)).toEqual({ balance: 994_000, held: 0, available: 994_000 });
  await dying.stop(0);
  await expectInvariants(db, [acct]);
}, 60_000);
