/**
 * The credit engine on every database reelay supports (engine-postgres.test.ts,
 * engine-pglite.test.ts): leases approve in memory, batches settle exactly once, the client view,
 * several engines ("instances") sharing one account spend exactly what it has.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import * as billing from "../../src/billing/index.ts";
import { query, type Tx } from "../../src/db/index.ts";
import { ApiError } from "../../src/errors.ts";
import { createLogger } from "../../src/logger.ts";
import { testConfig } from "../support/harness.ts";
import { openLease, returnLease } from "../../src/billing/lease-statements.ts";
import { accountState, expectInvariants, fundedAccount, ledgerOf, type BillingDb } from "./support.ts";

export const FAST: billing.BillingConfig = {
  leases: true, flushMs: 5, leaseTtlMs: 2_000, leaseDemandMs: 300, leaseWarmRequests: 2, leaseSharePermille: 500, offlineMs: 1_000, reclaimWaitMs: 600, journal: false,
};

const logger = createLogger(testConfig({ REELAY_LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "error" }));

export function newEngine(db: BillingDb["db"], over: Partial<billing.BillingConfig> = {}, dataDir: string | null = null, clock?: () => number) {
  return new billing.CreditEngine({ db, logger, config: { ...FAST, ...over }, holdTtlMs: 60_000, instanceId: "test", dataDir, clock });
}

let refs = 0;
/** One request through the engine: approve `worst`, then settle `actual` (or release when null). */
export async function request(engine: billing.CreditEngine, accountId: string, worst: number, actual: number | null) {
  const ref = `req_e${++refs}_${Math.random().toString(36).slice(2, 8)}`;
  const a = await engine.approve({ accountId, ref, amount: worst, reason: "engine test" });
  engine.settle(a, {
    mode: actual === null ? "release" : "settle", actual: actual ?? 0, reason: "engine test",
    usage: { accountId, ref, kind: "chat", model: "m", status: actual === null ? 502 : 200 },
  });
  return { ref, kind: a.kind };
}

const openHolds = async (db: Tx, accountId: string, kind: string) =>
  Number((await query<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM holds WHERE account_id = ${accountId} AND kind = ${kind}`))[0]!.n);

export function describeEngine(name: string, open: () => Promise<BillingDb>) {
  describe(`credit engine on ${name}`, () => {
    let bdb: BillingDb;
    beforeAll(async () => {
      bdb = await open();
    }, 60_000);
    afterAll(async () => {
      await bdb?.dispose();
    });

    test("a busy account is approved from a lease in memory: 200 requests, 1 exact hold, every charge once, the ledger exact", async () => {
      const db = bdb.db;
      const acct = await fundedAccount(db, 10_000_000);
      const engine = newEngine(db);
      let expected = 0;
      const kinds: string[] = [];
      for (let round = 0; round < 20; round++) {
        const rs = await Promise.all(Array.from({ length: 10 }, (_, i) => {
          const actual = (round * 10 + i) % 7 === 0 ? null : 100 + ((round * 13 + i * 7) % 900);
          expected += actual ?? 0;
          return request(engine, acct, 1_000, actual);
        }));
        kinds.push(...rs.map((r) => r.kind));
      }
      expect(kinds[0]).toBe("hold"); // a cold account: one exact hold
      expect(kinds.filter((k) => k === "hold").length).toBeLessThanOrEqual(10);
      expect(kinds.filter((k) => k === "lease").length).toBeGreaterThanOrEqual(190);
      expect(await openHolds(db, acct, "request")).toBeLessThanOrEqual(10);
      await engine.sync();
      const view = await billing.clientBalance(db, acct);
      expect({ balance: view.balance, held: view.held, available: view.available }).toEqual({ balance: 10_000_000 - expected, held: 0, available: 10_000_000 - expected });
      expect(view.leases).toBe(1);
      const usage = await query<{ n: number; cost: number }>(db, sql`SELECT count(*)::int AS n, sum(cost)::float8 AS cost FROM usage_records WHERE account_id = ${acct}`);
      expect({ n: usage[0]!.n, cost: Number(usage[0]!.cost) }).toEqual({ n: 200, cost: expected });
      expect(engine.stats.batches).toBeLessThan(200); // batched
      await expectInvariants(db, [acct]);
      await engine.stop();
      // a stopped engine closes its lease: the whole reservation goes back
      expect(await billing.getBalance(db, acct)).toEqual({ balance: 10_000_000 - expected, held: 0, available: 10_000_000 - expected });
      expect((await ledgerOf(db, acct)).filter((r) => r.kind === "lease_return").length).toBeGreaterThanOrEqual(1);
      await expectInvariants(db, [acct]);
    }, 60_000);

    test("client view: held is the worst case in flight (not the lease), and 0 once idle", async () => {
      const db = bdb.db;
      const acct = await fundedAccount(db, 1_000_000);
      const engine = newEngine(db);
      await request(engine, acct, 5_000, 1_000);
      await request(engine, acct, 5_000, 1_000); // warm: a lease now
      const a = await engine.approve({ accountId: acct, ref: "req_view_1", amount: 7_000, reason: "t" });
      expect(a.kind).toBe("lease");
      await engine.sync();
      const during = await billing.clientBalance(db, acct);
      expect({ balance: during.balance, held: during.held }).toEqual({ balance: 998_000, held: 7_000 });
      expect((await billing.getBalance(db, acct)).held).toBeGreaterThan(7_000); // the operator sees the lease
      engine.settle(a, { mode: "settle", actual: 6_000, reason: "t", usage: { accountId: acct, ref: "req_view_1", kind: "chat", model: "m", status: 200 } });
      // without a reader waiting: the batch lands within the flush interval, far under 1 s
      const t0 = performance.now();
      while ((await billing.clientBalance(db, acct)).balance !== 992_000) {
        expect(performance.now() - t0).toBeLessThan(1_000);
        await Bun.sleep(10);
      }
      await engine.sync();
      expect(await billing.clientBalance(db, acct)).toMatchObject({ balance: 992_000, held: 0, available: 992_000 });
      await engine.stop();
      await expectInvariants(db, [acct]);
    }, 60_000);

    test("usage above the worst case: charged as far as the account allows, never negative, shortfall recorded", async () => {
      const db = bdb.db;
      const acct = await fundedAccount(db, 30_000);
      const engine = newEngine(db);
      await request(engine, acct, 1_000, 1_000);
      await request(engine, acct, 1_000, 1_000);
      await request(engine, acct, 1_000, 50_000); // the upstream's usage was far above the hold
      await engine.sync();
      const s = await accountState(db, acct);
      await engine.stop();
      expect(await billing.getBalance(db, acct)).toEqual({ balance: 0, held: 0, available: 0 });
      expect(s.balance).toBe(0);
      const rows = await ledgerOf(db, acct);
      expect(rows.filter((r) => r.kind === "shortfall").map((r) => r.reason)).toEqual([expect.stringMatching(/^shortfall: 22000 micro-dollars/)]);
      await expectInvariants(db, [acct]);
    }, 60_000);

    test("a batch replayed after it landed (a retry after a lost answer, a journal at restart) charges nothing twice", async () => {
      const db = bdb.db;
      const acct = await fundedAccount(db, 100_000);
      const h = await billing.hold(db, { accountId: acct, amount: 5_000, ref: "req_replay_h", reason: "t", expiresAt: new Date(Date.now() + 60_000) });
      const batch: billing.Settlement[] = [
        { holdId: h.id, mode: "settle", actual: 4_000, cover: 0, reason: "t", usage: { accountId: acct, ref: "req_replay_h", kind: "chat", model: "m", status: 200 } },
        { holdId: null, mode: "settle", actual: 3_000, cover: 0, reason: "t", usage: { accountId: acct, ref: "req_replay_free", kind: "chat", model: "m", status: 200 } },
      ];
      expect((await billing.settleBatch(db, batch)).applied.map((r) => r.charged)).toEqual([4_000, 3_000]);
      for (let i = 0; i < 3; i++) expect((await billing.settleBatch(db, batch)).applied).toEqual([]);
      // two replays at once: one applies, the other finds it done (or loses the unique index and is retried)
      const again = batch.map((b) => ({ ...b, holdId: null, usage: { ...b.usage, ref: b.usage.ref + "_2" } }));
      const rs = await Promise.allSettled([billing.settleBatch(db, again), billing.settleBatch(db, again)]);
      for (const r of rs) if (r.status === "rejected") expect(String((r.reason as { code?: string }).code)).toBe("23505");
      expect((await billing.settleBatch(db, again)).applied).toEqual([]);
      expect(await billing.getBalance(db, acct)).toEqual({ balance: 100_000 - 14_000, held: 0, available: 100_000 - 14_000 });
      await expectInvariants(db, [acct]);
    }, 60_000);

    test("two instances on one nearly empty account spend exactly all of it: no early 402, no overspend", async () => {
      const db = bdb.db;
      const CREDIT = 100_500, COST = 1_000;
      const acct = await fundedAccount(db, CREDIT);
      const engines = [newEngine(db), newEngine(db)];
      let approved = 0;
      const refused: ApiError[] = [];
      // each instance runs 4 request loops until refused
      await Promise.all(engines.flatMap((e) => Array.from({ length: 4 }, async () => {
        for (;;) {
          try {
            await request(e, acct, COST, COST);
            approved++;
          } catch (err) {
            if (!(err instanceof ApiError) || err.status !== 402) throw err;
            refused.push(err);
            return;
          }
        }
      })));
      expect(approved).toBe(Math.floor(CREDIT / COST));
      expect(refused.length).toBe(8);
      for (const e of engines) await e.sync();
      expect((await billing.clientBalance(db, acct)).balance).toBe(CREDIT - approved * COST);
      for (const e of engines) await e.stop();
      expect(await billing.getBalance(db, acct)).toEqual({ balance: 500, held: 0, available: 500 });
      // the last refusal is exact: what is left, to the micro-dollar
      expect(refused.at(-1)!.message).toContain("(500 micro-dollars) is available");
      await expectInvariants(db, [acct]);
    }, 60_000);

    test("an instance asked for its idle lease credit gives it back at its next heartbeat", async () => {
      const db = bdb.db;
      const acct = await fundedAccount(db, 1_000_000);
      const a = newEngine(db), b = newEngine(db);
      for (let i = 0; i < 5; i++) await request(a, acct, 50_000, 10_000);
      expect(await openHolds(db, acct, "lease")).toBe(1);
      await a.sync();
      const before = await billing.clientBalance(db, acct);
      expect(before.leasedIdle).toBeGreaterThan(0);
      // b needs more than the account's unleased credit: a gives its idle part back within the wait
      const need = before.available - (await billing.getBalance(db, acct)).available + 1;
      const t0 = performance.now();
      const got = await b.approve({ accountId: acct, ref: "req_reclaim", amount: need, reason: "t" });
      expect(got.kind).toBe("hold");
      expect(performance.now() - t0).toBeLessThan(600);
      b.settle(got, { mode: "release", actual: 0, reason: "t", usage: { accountId: acct, ref: "req_reclaim", kind: "chat", model: "m", status: 502 } });
      await a.stop();
      await b.stop();
      expect(await billing.getBalance(db, acct)).toEqual({ balance: 950_000, held: 0, available: 950_000 });
      await expectInvariants(db, [acct]);
    }, 60_000);

    test("a refusal that other instances' idle lease credit cannot avert states what the account has, that idle credit included (as /v1/account does)", async () => {
      const db = bdb.db;
      const acct = await fundedAccount(db, 1_000_000);
      const a = newEngine(db), b = newEngine(db);
      for (let i = 0; i < 5; i++) await request(a, acct, 50_000, 10_000);
      await a.sync();
      const client = await billing.clientBalance(db, acct);
      expect(client.leasedIdle).toBeGreaterThan(0);
      expect(client.available).toBe(950_000);
      // without the idle lease credit the account would look poorer than it is
      expect((await billing.getBalance(db, acct)).available).toBeLessThan(950_000);
      const err = await b.approve({ accountId: acct, ref: "req_short", amount: 950_001, reason: "t" }).catch((e) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect({ status: err.status, code: err.code }).toEqual({ status: 402, code: "insufficient_quota" });
      expect(err.message).toContain("(950001 micro-dollars) but only $0.950000 (950000 micro-dollars) is available");
      await a.stop();
      await b.stop();
      expect(await billing.getBalance(db, acct)).toEqual({ balance: 950_000, held: 0, available: 950_000 });
      await expectInvariants(db, [acct]);
    }, 60_000);

    test("a refusal while another instance keeps idle credit it was asked for says what could be reserved now and what is out on other instances", async () => {
      const db = bdb.db;
      const acct = await fundedAccount(db, 10_000);
      // the lease of an instance that stopped answering: nothing reads its return request
      const id = `lease_silent_${Math.random().toString(36).slice(2, 10)}`;
      expect(await openLease(db, { id, accountId: acct, owner: "stalled#1", need: 4_000, want: 4_000, sharePermille: 1_000, ttlMs: 60_000 })).toBe(4_000);
      const b = newEngine(db, { reclaimWaitMs: 100 });
      const err = await b.approve({ accountId: acct, ref: "req_stalled", amount: 8_000, reason: "t" }).catch((e) => e);
      expect({ status: err.status, code: err.code }).toEqual({ status: 402, code: "insufficient_quota" });
      expect(err.message).toBe("Insufficient credits: this request needs $0.008000 (8000 micro-dollars) but only $0.006000 (6000 micro-dollars) is available; $0.004000 (4000 micro-dollars) more is reserved by other reelay instances and is being given back: retry shortly.");
      await returnLease(db, { id, amount: 0, close: true, reason: "test over" });
      await b.stop();
      expect(await billing.getBalance(db, acct)).toEqual({ balance: 10_000, held: 0, available: 10_000 });
      await expectInvariants(db, [acct]);
    }, 60_000);

    test("an operator's adjustment that leased credit stands in the way gets it back (from this instance and others)", async () => {
      const db = bdb.db;
      const acct = await fundedAccount(db, 1_000_000);
      const a = newEngine(db), b = newEngine(db);
      for (let i = 0; i < 3; i++) await request(a, acct, 50_000, 10_000);
      for (let i = 0; i < 3; i++) await request(b, acct, 50_000, 10_000);
      await a.sync();
      await b.sync();
      expect((await billing.getBalance(db, acct)).held).toBeGreaterThan(100_000); // two leases
      // the client can spend 940,000: an operator may take 900,000 of it
      await expect(billing.adjust(db, acct, -900_000, "refund", null)).rejects.toMatchObject({ status: 400 });
      expect(await a.adjust(acct, -900_000, "refund", null)).toBe(40_000);
      expect(await billing.clientBalance(db, acct)).toMatchObject({ balance: 40_000, held: 0, available: 40_000 });
      await a.stop();
      await b.stop();
      await expectInvariants(db, [acct]);
    }, 60_000);

    test("a settlement that fails on its own is isolated: the others land, readers are not held up", async () => {
      const db = bdb.db;
      const acct = await fundedAccount(db, 1_000_000);
      const engine = newEngine(db);
      const good = await Promise.all(Array.from({ length: 6 }, () => request(engine, acct, 1_000, 700)));
      const a = await engine.approve({ accountId: acct, ref: "req_broken", amount: 1_000, reason: "t" });
      // a bug upstream of the engine: an amount the statement refuses
      engine.settle(a, { mode: "settle", actual: -1, reason: "t", usage: { accountId: acct, ref: "req_broken", kind: "chat", model: "m", status: 200 } });
      good.push(...(await Promise.all(Array.from({ length: 6 }, () => request(engine, acct, 1_000, 700)))));
      const t0 = performance.now();
      await engine.sync();
      await engine.sync(); // a failed batch does not leave readers waiting for ever
      expect(performance.now() - t0).toBeLessThan(1_900);
      const rows = await query<{ ref: string }>(db, sql`SELECT ref FROM usage_records WHERE account_id = ${acct}`);
      expect(rows.map((r) => r.ref).sort()).toEqual(good.map((g) => g.ref).sort());
      expect(engine.snapshot().stuck).toBe(1);
      await engine.stop(100);
      await expectInvariants(db, [acct]);
    }, 60_000);

    test("a reader that arrives while a batch is being written does not stop later settlements from landing", async () => {
      // The console's embeddings charge that never reached the database: exact holds (no lease to
      // renew), a batch in flight, and a second reader behind it. The flush that reader asked for
      // had nothing to write, finished without awaiting anything, and left the flusher marked busy
      // for ever; every later settlement stayed queued in memory until shutdown.
      const db = bdb.db;
      const acct = await fundedAccount(db, 1_000_000);
      const engine = newEngine(db, { leases: false });
      const one = async (ref: string, actual: number) => {
        const a = await engine.approve({ accountId: acct, ref, amount: 1_000, reason: "t" });
        engine.settle(a, { mode: "settle", actual, reason: "t", usage: { accountId: acct, ref, kind: "embeddings", model: "m", status: 200 } });
      };
      await one("req_reader_1", 100);
      const first = engine.sync(); // a reader: the batch is written at once
      const second = engine.sync(); // another reader while that statement is in flight
      await Promise.all([first, second]);
      expect((await billing.clientBalance(db, acct)).balance).toBe(999_900);
      await one("req_reader_2", 200);
      // nobody waits for it: the flush interval alone must bring it in, well within a second
      const t0 = performance.now();
      while ((await billing.clientBalance(db, acct)).balance !== 999_700 && performance.now() - t0 < 1_000) await Bun.sleep(10);
      expect({ balance: (await billing.clientBalance(db, acct)).balance, queued: engine.snapshot().queued }).toEqual({ balance: 999_700, queued: 0 });
      // and a reader is answered at once, not after its timeout
      await one("req_reader_3", 300);
      const t1 = performance.now();
      await engine.sync(5_000);
      expect(performance.now() - t1).toBeLessThan(1_000);
      expect((await billing.clientBalance(db, acct)).balance).toBe(999_400);
      await engine.stop();
      await expectInvariants(db, [acct]);
    }, 60_000);

    test("leases off: every request takes an exact hold, settlements are still batched", async () => {
      const db = bdb.db;
      const acct = await fundedAccount(db, 1_000_000);
      const engine = newEngine(db, { leases: false });
      const rs = await Promise.all(Array.from({ length: 30 }, (_, i) => request(engine, acct, 2_000, i)));
      expect(new Set(rs.map((r) => r.kind))).toEqual(new Set(["hold"]));
      await engine.sync();
      expect(engine.stats.batches).toBeLessThan(30);
      expect(await billing.getBalance(db, acct)).toEqual({ balance: 1_000_000 - 435, held: 0, available: 1_000_000 - 435 });
      await engine.stop();
      await expectInvariants(db, [acct]);
    }, 60_000);
  });
}

/** A temporary data directory for journal tests. */
export function tempDir(prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
