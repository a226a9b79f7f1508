/**
 * holdMany (a batch's group-committed holds) on the real Postgres: a group takes the prefix of its
 * holds that fits the account, never more, also with groups racing each other; a group read at a
 * stale budgets version takes none; what it takes settles and releases like any exact hold.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as billing from "../../src/billing/index.ts";
import { accountState, budgetsVersionOf, expectInvariants, fundedAccount, openPostgres, release, settle, type BillingDb } from "./support.ts";

let pg: BillingDb;
beforeAll(async () => { pg = await openPostgres(20); });
afterAll(async () => { await pg?.dispose(); });

const X = 1_000;
const versionOf = (acct: string) => budgetsVersionOf(pg.db, acct);
const group = (acct: string, n: number, version: number, tag: string): billing.GroupHold[] =>
  Array.from({ length: n }, (_, i) => ({ accountId: acct, amount: X, ref: `${tag}-${i}`, reason: "batch line", expiresAt: new Date(Date.now() + 60_000), budget: { windows: [], version, now: Date.now() } }));

test("a group takes the prefix that fits: 5 of 8 on an account funded for 5; they settle and release exactly", async () => {
  const acct = await fundedAccount(pg.db, 5 * X);
  const ids = await billing.holdMany(pg.db, group(acct, 8, await versionOf(acct), "p"));
  expect(ids.map((id) => id !== null)).toEqual([true, true, true, true, true, false, false, false]);
  expect(await accountState(pg.db, acct)).toMatchObject({ balance: 5 * X, held: 5 * X });
  await expectInvariants(pg.db, [acct]);
  const hold = (i: number) => ({ id: ids[i]!, accountId: acct, amount: X, ref: `p-${i}` });
  await settle(pg.db, hold(0), 600);
  await release(pg.db, hold(1));
  expect(await accountState(pg.db, acct)).toMatchObject({ balance: 5 * X - 600, held: 3 * X });
  await expectInvariants(pg.db, [acct]);
});

test("20 groups of 10 racing on an account funded for 50: exactly 50 taken, never more", async () => {
  const acct = await fundedAccount(pg.db, 50 * X);
  const v = await versionOf(acct);
  const results = await Promise.all(Array.from({ length: 20 }, (_, g) => billing.holdMany(pg.db, group(acct, 10, v, `r${g}`))));
  expect(results.flat().filter((id) => id !== null)).toHaveLength(50);
  expect(await accountState(pg.db, acct)).toMatchObject({ balance: 50 * X, held: 50 * X });
  await expectInvariants(pg.db, [acct]);
});

test("a group read at a stale budgets version takes nothing (hold() then says StaleBudgets)", async () => {
  const acct = await fundedAccount(pg.db, 50 * X);
  const stale = (await versionOf(acct)) - 1;
  expect(await billing.holdMany(pg.db, group(acct, 3, stale, "s"))).toEqual([null, null, null]);
  expect(await accountState(pg.db, acct)).toMatchObject({ held: 0 });
  await expect(billing.hold(pg.db, group(acct, 1, stale, "s1")[0]!)).rejects.toBeInstanceOf(billing.StaleBudgets);
  await expectInvariants(pg.db, [acct]);
});
