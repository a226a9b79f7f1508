/**
 * The credit engine's parts on their own, on every database reelay supports
 * (engine-parts-postgres.test.ts, engine-parts-pglite.test.ts):
 *  - the lease book (leases.ts) with a settlement queue and no engine around them: a slot per set
 *    of budget windows, a lease reserving in the account and in each of its windows, no approval
 *    after its windows end (then given back and closed once its requests are settled), a stale
 *    lease after a budgets change, demand carried over to the next period's slot;
 *  - the settlement queue (settlement-queue.ts): one statement for many settlements, a reader's
 *    sync, a settlement that fails on its own set aside, the alerts callback;
 *  - exact approvals (exact-approvals.ts), through two engines: a request a window can only take
 *    with another instance's idle lease credit is approved once that credit is asked back; the
 *    402 figure is exact and the tightest pot names it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { createKey } from "../../../src/accounts/api-keys.ts";
import * as billing from "../../../src/billing/index.ts";
import { setBudgets } from "../../../src/billing/budgets.ts";
import { DbHealth } from "../../../src/billing/db-health.ts";
import { LeaseBook } from "../../../src/billing/leases.ts";
import { SettlementQueue } from "../../../src/billing/settlement-queue.ts";
import { BudgetWindows } from "../../../src/billing/windows.ts";
import { query } from "../../../src/db/index.ts";
import { ApiError } from "../../../src/errors.ts";
import { createLogger } from "../../../src/logger.ts";
import { testConfig } from "../../support/harness.ts";
import { FAST, newEngine } from "../engine.case.ts";
import { accountState, expectInvariants, expectWindowInvariants, fundedAccount, windowRows, type BillingDb } from "../support.ts";

const logger = createLogger(testConfig({ REELAY_LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "error" }));
let refs = 0;
const ref = () => `req_parts${++refs}_${Math.random().toString(36).slice(2, 8)}`;
const usage = (accountId: string, r: string) => ({ accountId, ref: r, kind: "chat" as const, model: "m", status: 200 });

/**
 * A client's retry: on a slow machine another instance may give its idle credit back after the
 * wait, and the 402 then says "retry shortly" (the design); a retry a moment later gets it.
 */
async function retried<T>(f: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await f();
    } catch (e) {
      if (!(e instanceof ApiError && /retry shortly/.test(e.message)) || i >= 20) throw e;
      await Bun.sleep(200);
    }
  }
}

function parts(db: BillingDb["db"], clock: () => number) {
  const health = new DbHealth();
  const stats = { batches: 0, settlements: 0, largestBatch: 0, shortfalls: 0, replayed: 0, flushErrors: 0, leaseApprovals: 0, leasesOpened: 0, refills: 0, returns: 0 };
  const stale: string[] = [];
  let alerts = 0;
  const book = new LeaseBook({ db, logger, config: FAST, health, stats, owner: `parts#${refs}`, clock, onStale: (a) => stale.push(a) });
  const queue = new SettlementQueue({ db, logger, config: FAST, health, stats, leases: book, onAlerts: () => alerts++ });
  book.flusher = queue;
  return { book, queue, stats, stale, alerts: () => alerts, windows: new BudgetWindows(db, clock) };
}

export function describeEngineParts(name: string, open: () => Promise<BillingDb>) {
  describe(`credit engine parts on ${name}`, () => {
    let bdb: BillingDb;
    beforeAll(async () => {
      bdb = await open();
    }, 60_000);
    afterAll(async () => {
      await bdb?.dispose();
    });

    test("lease book: a slot per set of windows; its lease reserves in the account and each window; no approval once they end; then given back and closed", async () => {
      const db = bdb.db;
      let now = Date.parse("2026-05-05T23:59:00Z");
      const p = parts(db, () => now);
      const acct = await fundedAccount(db, 1_000_000);
      const key = (await createKey(db, acct, { name: "k" })).record.id;
      await setBudgets(db, { accountId: acct, keyId: key }, [{ period: "day", limit: 400_000 }], now);
      const scope = await p.windows.scope(acct, key, "m");
      const slot = p.book.slotFor(acct, scope);
      expect(p.book.slotFor(acct)).not.toBe(slot);
      expect(p.book.slotsOf(acct).length).toBe(2);
      await p.book.acquire(slot, 10_000);
      const leased = slot.lease!.reserved;
      expect(leased).toBeGreaterThanOrEqual(10_000);
      expect(leased).toBeLessThanOrEqual(200_000); // half of the window at most (REELAY_LEASE_MAX_SHARE_PERCENT)
      expect((await windowRows(db, [acct]))[0]).toMatchObject({ held: leased, spent: 0 });
      expect((await accountState(db, acct)).held).toBe(leased);
      const a = p.book.fromLease(slot, 10_000, performance.now())!;
      expect(a.kind).toBe("lease");
      // midnight: the window is over, its lease approves nothing more
      now = Date.parse("2026-05-06T00:00:00Z");
      expect(p.book.fromLease(slot, 1, performance.now())).toBeNull();
      // the request approved before midnight settles in its window; the heartbeat gives the lease back and closes it
      a.lease.inflight -= 10_000;
      const r = ref();
      const cover = Math.min(7_000, a.lease.free);
      a.lease.pending += cover;
      p.queue.push({ holdId: a.lease.id, mode: "settle", actual: 7_000, cover, reason: "parts", usage: usage(acct, r) }, a.lease);
      await p.queue.sync();
      for (let i = 0; i < 50 && slot.lease; i++) {
        p.book.beat();
        await Bun.sleep(10);
      }
      await p.queue.sync();
      expect(slot.lease).toBeNull();
      expect((await windowRows(db, [acct]))[0]).toMatchObject({ held: 0, spent: 7_000 });
      await p.queue.drain(1_000);
      await p.book.closeAll();
      await expectInvariants(db, [acct]);
      await expectWindowInvariants(db, [acct]);
    });

    test("lease book: a budgets change makes a lease stale (it approves nothing and is given back); the next period's slot starts with the demand of the last", async () => {
      const db = bdb.db;
      let now = Date.parse("2026-05-05T12:00:00Z");
      const p = parts(db, () => now);
      const acct = await fundedAccount(db, 1_000_000);
      await setBudgets(db, { accountId: acct, keyId: null }, [{ period: "day", limit: 500_000 }], now);
      const slot = p.book.slotFor(acct, await p.windows.scope(acct, null, null));
      for (let i = 0; i < 5; i++) slot.noteDemand(5_000, performance.now(), FAST.leaseDemandMs);
      await p.book.acquire(slot, 5_000);
      expect(slot.lease).not.toBeNull();
      await setBudgets(db, { accountId: acct, keyId: null }, [{ period: "day", limit: 100 }], now);
      // the heartbeat's batch reads the account's version: the lease is stale
      p.book.beat();
      await p.queue.sync();
      expect(slot.lease?.stale ?? true).toBe(true);
      expect(p.stale).toContain(acct);
      expect(p.book.fromLease(slot, 1, performance.now())).toBeNull();
      for (let i = 0; i < 50 && slot.lease; i++) {
        p.book.beat();
        await Bun.sleep(10);
      }
      expect(slot.lease).toBeNull();
      expect((await accountState(db, acct)).held).toBe(0);
      // the next day's slot (same budgets, new window) inherits the demand
      now = Date.parse("2026-05-06T12:00:00Z");
      p.windows.invalidate(acct);
      const next = p.book.slotFor(acct, await p.windows.scope(acct, null, null));
      expect(next).not.toBe(slot);
      const t = performance.now();
      expect(next.want(0, t, FAST.leaseDemandMs)).toBe(slot.want(0, t, FAST.leaseDemandMs));
      expect(next.want(0, t, FAST.leaseDemandMs)).toBeGreaterThan(0);
      await p.queue.drain(1_000);
      await p.book.closeAll();
      await expectWindowInvariants(db, [acct]);
    });

    test("lease book: a heartbeat's reading of the lease taken before a give-back of ours that was answered first does not undo the give-back; with no move of ours in between, the database's figure wins", async () => {
      const db = bdb.db;
      const p = parts(db, () => Date.now());
      const acct = await fundedAccount(db, 1_000_000);
      const slot = p.book.slotFor(acct);
      await p.book.acquire(slot, 10_000);
      const l = slot.lease!;
      const inDb = async () => Number((await query<{ amount: number }>(db, sql`SELECT amount::float8 AS amount FROM holds WHERE id = ${l.id}`))[0]!.amount);
      const before = l.reserved;
      expect(await inDb()).toBe(before);
      // a heartbeat batch is sent and reads the amount; then a give-back runs after it in the
      // database, and its answer is read first (two connections: either order is possible)
      const beats = p.book.beats();
      const readByBatch = { applied: [], leases: [{ id: l.id, amount: await inDb(), returnRequested: false, stale: false }], alerts: 0 };
      expect(await p.book.giveBack(slot, l, 30_000, false, "demand fell")).toBe(30_000);
      p.book.landed([], beats, readByBatch, performance.now());
      // memory keeps what the database reserves now: nothing to approve beyond it
      expect({ memory: l.reserved, free: l.free, database: await inDb() }).toEqual({ memory: before - 30_000, free: before - 30_000, database: before - 30_000 });
      // a heartbeat with no refill or give-back of ours around it: a difference is the database's
      const quiet = p.book.beats();
      p.book.landed([], quiet, { applied: [], leases: [{ id: l.id, amount: before - 30_005, returnRequested: false, stale: false }], alerts: 0 }, performance.now());
      expect(l.reserved).toBe(before - 30_005);
      await p.book.giveBack(slot, l, 0, true, "test over");
      await expectInvariants(db, [acct]);
    });

    test("settlement queue: 200 settlements in a few statements, a reader's sync waits for them, a broken one is set aside, crossed thresholds are reported", async () => {
      const db = bdb.db;
      const now = Date.parse("2026-05-05T12:00:00Z");
      const p = parts(db, () => now);
      const acct = await fundedAccount(db, 10_000_000);
      await setBudgets(db, { accountId: acct, keyId: null }, [{ period: "month", limit: 400_000, thresholds: [50] }], now);
      const budget = await p.windows.holdWindows(acct, null, null);
      const holds = await Promise.all(Array.from({ length: 200 }, () => billing.hold(db, { accountId: acct, amount: 1_500, ref: ref(), reason: "parts", expiresAt: new Date(Date.now() + 60_000), budget })));
      for (const h of holds) p.queue.push({ holdId: h.id, mode: "settle", actual: 1_000, cover: 0, reason: "parts", usage: usage(acct, h.ref) }, null);
      p.queue.push({ holdId: null, mode: "settle", actual: -1, cover: 0, reason: "broken", usage: usage(acct, ref()) }, null);
      await p.queue.sync();
      expect(p.stats.settlements).toBe(200);
      expect(p.stats.batches).toBeLessThan(20);
      expect(p.queue.stuckCount).toBe(1);
      expect((await windowRows(db, [acct]))[0]).toMatchObject({ spent: 200_000, held: 0 });
      expect(p.alerts()).toBe(1); // 50 % of 400,000
      const rows = await query<{ threshold: number }>(db, sql`SELECT threshold FROM budget_alerts WHERE account_id = ${acct}`);
      expect(rows.map((r) => Number(r.threshold))).toEqual([50]);
      await p.queue.drain(200);
      await expectInvariants(db, [acct]);
      await expectWindowInvariants(db, [acct]);
    });

    test("exact approvals: another instance's idle lease credit in the window is asked back before a refusal; the 402 then states what is left, from the tightest pot", async () => {
      const db = bdb.db;
      const now = Date.parse("2026-05-05T12:00:00Z");
      const acct = await fundedAccount(db, 10_000_000);
      const key = (await createKey(db, acct, { name: "k" })).record.id;
      await setBudgets(db, { accountId: acct, keyId: key }, [{ period: "day", limit: 100_000 }], now);
      const [a, b] = [newEngine(db, { reclaimWaitMs: 1_000 }, null, () => now), newEngine(db, { reclaimWaitMs: 1_000 }, null, () => now)];
      const req = (e: billing.CreditEngine, amount: number) => e.approve({ accountId: acct, keyId: key, model: "m", ref: ref(), amount, reason: "parts" });
      const done = (e: billing.CreditEngine, ap: billing.Approval, actual: number) =>
        e.settle(ap, { mode: "settle", actual, reason: "parts", usage: { ...usage(acct, ref()), keyId: key } });
      // a warms up and leases part of the window (at most half of it)
      for (let i = 0; i < 4; i++) done(a, await req(a, 4_000), 4_000);
      await a.sync();
      const leasedIdle = (await windowRows(db, [acct]))[0]!.held;
      expect(leasedIdle).toBeGreaterThan(0);
      // b needs more than the window has outside a's lease: approved once a gives its idle credit back
      const spent = 16_000;
      const need = 100_000 - spent - Math.floor(leasedIdle / 2);
      expect(need).toBeGreaterThan(100_000 - spent - leasedIdle);
      const big = await retried(() => req(b, need));
      expect(big.kind).toBe("hold");
      // now: exactly 100,000 − 16,000 − need left; one micro-dollar more is refused, saying so
      const left = 100_000 - spent - need;
      const refused = await req(b, left + 1).then(() => null, (e: unknown) => e);
      expect(refused).toBeInstanceOf(ApiError);
      expect((refused as ApiError).toJSON().error).toMatchObject({ code: "budget_exceeded", budget: { scope: "key", remaining: left } });
      // the same request fits exactly
      done(b, await retried(() => req(b, left)), left);
      done(b, big, need);
      await Promise.all([a.sync(), b.sync()]);
      await a.stop(); // its lease goes back: the operator's adjustment below is not in its way
      // the balance below the window: insufficient_quota, naming the balance
      await b.adjust(acct, -(10_000_000 - 100_000 - 10), "leave 10", null);
      await setBudgets(db, { accountId: acct, keyId: key }, [{ period: "month", limit: 1_000_000 }], now);
      const poor = await req(b, 11).then(() => null, (e: unknown) => e);
      expect((poor as ApiError).code).toBe("insufficient_quota");
      await b.stop();
      await expectInvariants(db, [acct]);
      await expectWindowInvariants(db, [acct]);
    });
  });
}
