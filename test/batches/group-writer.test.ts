/**
 * The batch scheduler's writer (line-ledger.ts's writeGroup) takes the lines' holds in the
 * transaction of the finished lines' settlements only for the accounts those settlements locked.
 * Here the interleaving that would deadlock otherwise is forced, on the real Postgres: accounts
 * A < B; a live settlement of both has locked A (billing locks accounts in id order) and will lock B
 * next; the writer's group settles a line of B and wants a hold of A. Taken inside the group's
 * transaction, that hold would wait for A while the group holds B, and the live settlement would
 * wait for B: a deadlock. The writer takes it after its commit instead: the live settlement gets B
 * at once, then the hold gets A.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import * as billing from "../../src/billing/index.ts";
import { query, type Tx } from "../../src/db/index.ts";
import { writeGroup, type HoldItem } from "../../src/modules/batches/line-ledger.ts";
import { budgetsVersionOf, expectInvariants, fundedAccount, openPostgres, someoneWaitsOnALock, usageFor, type BillingDb } from "../billing/support.ts";

let pg: BillingDb;
beforeAll(async () => { pg = await openPostgres(4); });
afterAll(async () => { await pg?.dispose(); });

test("a group settling account B's line and holding for account A, while a live settlement holds A and wants B: no deadlock, both done", async () => {
  const db = pg.db;
  const [a, b] = [await fundedAccount(db, 1_000_000), await fundedAccount(db, 1_000_000)].sort();
  const hb = await billing.hold(db, { accountId: b!, amount: 5_000, ref: "line-b", reason: "batch line", expiresAt: new Date(Date.now() + 60_000) });
  const want: HoldItem = { kind: "hold", hold: { accountId: a!, amount: 3_000, ref: "line-a", reason: "batch line", expiresAt: new Date(Date.now() + 60_000), budget: { windows: [], version: await budgetsVersionOf(db, a!), now: Date.now() } }, id: null };
  const result = { kind: "result" as const };
  const warnings: unknown[] = [];
  const writeResults = async (tx: Tx) => {
    const r = await billing.settleBatch(tx, [{ holdId: hb.id, mode: "settle", actual: 4_000, cover: 0, reason: "batch line", usage: usageFor(hb) }]);
    return new Set(r.applied.length > 0 ? [b!] : []);
  };

  let group: Promise<void> | null = null;
  const live = await db.transaction(async (tx) => {
    // the live settlement's account step, in id order: A now, B next
    await query(tx, sql`SET LOCAL lock_timeout = '10s'`);
    await query(tx, sql`SELECT id FROM accounts WHERE id = ${a!} FOR UPDATE`);
    group = writeGroup(db, [result, want], writeResults, (err) => warnings.push(err));
    await someoneWaitsOnALock(db, "the group's hold");
    const t0 = performance.now();
    const rows = await query<{ id: string }>(tx, sql`SELECT id FROM accounts WHERE id = ${b!} FOR UPDATE`);
    return { rows: rows.map((r) => r.id), waitedMs: performance.now() - t0 };
  });
  expect(live.rows).toEqual([b]);
  // B was free: the group had committed (Postgres' deadlock check would have taken 1 s)
  expect(live.waitedMs).toBeLessThan(900);
  await group!;
  expect(warnings).toEqual([]);
  expect(want.id).toStartWith("hold");
  const holds = await query<{ id: string; account_id: string; state: string; amount: number }>(db, sql`SELECT id, account_id, state, amount::float8 AS amount FROM holds WHERE id IN (${hb.id}, ${want.id}) ORDER BY account_id`);
  expect(holds.map((h) => [h.account_id, h.state, h.amount])).toEqual([[a, "open", 3_000], [b, "settled", 5_000]]);
  await expectInvariants(db, [a!, b!]);
});
