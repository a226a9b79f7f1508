/**
 * Billing under real concurrency (Postgres, a pool of 20 connections): holds cannot overspend,
 * and a hold is closed exactly once however its settles, releases and the sweeper race.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as billing from "../../src/billing/index.ts";
import { ApiError } from "../../src/errors.ts";
import { accountState, expectInvariants, fundedAccount, holdRows, openPostgres, release, settle, type BillingDb } from "./support.ts";

let pg: BillingDb;
beforeAll(async () => {
  pg = await openPostgres(20);
});
afterAll(async () => {
  await pg?.dispose();
});

const X = 150_000; // one 5 s video at 0.030 USD/s

describe("200 parallel holds on an account funded for exactly 50", () => {
  test("exactly 50 succeed, 150 get 402 insufficient_quota, never negative, held == 50·X", async () => {
    const db = pg.db;
    const acct = await fundedAccount(db, 50 * X);
    let sampling = true;
    const samples: { balance: number; held: number }[] = [];
    const sampler = (async () => {
      while (sampling) {
        const s = await accountState(db, acct);
        samples.push({ balance: s.balance, held: s.held });
        await Bun.sleep(2);
      }
    })();
    const results = await Promise.allSettled(
      Array.from({ length: 200 }, (_, i) => billing.hold(db, { accountId: acct, amount: X, ref: `req_par_${i}`, reason: "chat test", expiresAt: new Date(Date.now() + 60_000) })),
    );
    sampling = false;
    await sampler;

    const ok = results.filter((r) => r.status === "fulfilled");
    const failed = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
    expect(ok.length).toBe(50);
    expect(failed.length).toBe(150);
    for (const f of failed) {
      expect(f.reason).toBeInstanceOf(ApiError);
      const e = f.reason as ApiError;
      expect({ status: e.status, type: e.type, code: e.code }).toEqual({ status: 402, type: "insufficient_quota", code: "insufficient_quota" });
      // every refusal came after the account was full: available is 0 and the message says so
      expect(e.message).toContain("(0 micro-dollars)");
      expect(e.message).toContain(`(${X} micro-dollars)`);
    }
    expect(samples.length).toBeGreaterThan(0);
    for (const s of samples) {
      expect(s.balance).toBe(50 * X);
      expect(s.held).toBeGreaterThanOrEqual(0);
      expect(s.held).toBeLessThanOrEqual(s.balance);
    }
    const s = await accountState(db, acct);
    expect({ balance: s.balance, held: s.held, open: s.openHolds }).toEqual({ balance: 50 * X, held: 50 * X, open: 50 * X });
    expect(await billing.getBalance(db, acct)).toEqual({ balance: 50 * X, held: 50 * X, available: 0 });
    await expectInvariants(db, [acct]);

    // the message of a refusal names what is available when some is
    const holds = ok.map((r) => (r as PromiseFulfilledResult<billing.Hold>).value);
    await release(db, holds[0]!, "test");
    const e = await billing.hold(db, { accountId: acct, amount: 2 * X, ref: "req_par_big", reason: "chat test", expiresAt: null }).catch((x) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect((e as ApiError).status).toBe(402);
    expect((e as ApiError).message).toContain(`(${X} micro-dollars) is available`);
  });

  test("50 parallel holds inside transactions that also do other work: the same limit", async () => {
    const db = pg.db;
    const acct = await fundedAccount(db, 10 * X);
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) =>
        db.transaction(async (tx) => {
          const h = await billing.hold(tx, { accountId: acct, amount: X, ref: `vid_tx_${i}`, reason: "video test", expiresAt: null });
          await Bun.sleep(5); // the caller's own insert would happen here, in the same transaction
          return h;
        }),
      ),
    );
    expect(results.filter((r) => r.status === "fulfilled").length).toBe(10);
    expect(await billing.getBalance(db, acct)).toEqual({ balance: 10 * X, held: 10 * X, available: 0 });
    await expectInvariants(db, [acct]);
  }, 60_000);
});

describe("racing closes of one hold: exactly one takes effect", () => {
  const N = 40;

  async function openHolds(acct: string, prefix: string, expiresAt: Date | null) {
    return Promise.all(Array.from({ length: N }, (_, i) => billing.hold(pg.db, { accountId: acct, amount: X, ref: `${prefix}_${i}`, reason: "race test", expiresAt })));
  }

  test("double settle: one charge per hold, the second call reports applied=false", async () => {
    const db = pg.db;
    const acct = await fundedAccount(db, N * X);
    const holds = await openHolds(acct, "req_ds", null);
    const pairs = await Promise.all(holds.map((h) => Promise.all([settle(db, h, 100_000, "first"), settle(db, h, 120_000, "second")])));
    for (const [a, b] of pairs) expect([a.applied, b.applied].sort()).toEqual([false, true]);
    for (const h of holds) {
      const kinds = (await holdRows(db, h.id)).map((r) => r.kind);
      expect(kinds.filter((k) => k === "charge").length).toBe(1);
      expect(kinds.filter((k) => k === "release").length).toBe(1);
    }
    const charged = pairs.reduce((n, [a, b]) => n + (a.applied ? a.charged : b.charged), 0);
    expect(await billing.getBalance(db, acct)).toEqual({ balance: N * X - charged, held: 0, available: N * X - charged });
    await expectInvariants(db, [acct]);
  }, 60_000);

  test("settle vs release: one of them wins, neither throws", async () => {
    const db = pg.db;
    const acct = await fundedAccount(db, N * X);
    const holds = await openHolds(acct, "req_sr", null);
    // alternate which call is sent first
    const race = async (h: billing.Hold, settleFirst: boolean): Promise<[billing.SingleSettlement, boolean]> => {
      if (settleFirst) return Promise.all([settle(db, h, 90_000, "settle"), release(db, h, "release")]);
      const [r, s] = await Promise.all([release(db, h, "release"), settle(db, h, 90_000, "settle")]);
      return [s, r];
    };
    const outcomes = await Promise.allSettled(holds.map((h, i) => race(h, i % 2 === 0)));
    const errors = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected").map((o) => String(o.reason?.message ?? o.reason));
    expect(errors).toEqual([]);
    let settled = 0;
    for (const [i, o] of outcomes.entries()) {
      const [s, r] = (o as PromiseFulfilledResult<[billing.SingleSettlement, boolean]>).value;
      expect(s.applied !== r).toBe(true);
      const kinds = (await holdRows(db, holds[i]!.id)).map((x) => x.kind).sort();
      expect(kinds).toEqual(s.applied ? ["charge", "hold", "release"] : ["hold", "release"]);
      if (s.applied) settled++;
    }
    expect(await billing.getBalance(db, acct)).toEqual({ balance: N * X - settled * 90_000, held: 0, available: N * X - settled * 90_000 });
    await expectInvariants(db, [acct]);
  }, 60_000);

  test("settle vs the expiry sweeper: one wins, neither throws", async () => {
    const db = pg.db;
    const acct = await fundedAccount(db, N * X);
    const holds = await openHolds(acct, "req_sw", new Date(Date.now() - 1000)); // already expired
    const sweeps: Promise<number>[] = [];
    const settles = holds.map((h, i) => {
      if (i % 4 === 0) sweeps.push(billing.sweepExpiredHolds(db, 10));
      return settle(db, h, 50_000, "settle");
    });
    const outcomes = await Promise.allSettled([...settles, ...sweeps]);
    const errors = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected").map((o) => String(o.reason?.message ?? o.reason));
    expect(errors).toEqual([]);
    await billing.sweepExpiredHolds(db); // whatever neither got to
    const applied = (await Promise.all(settles)).filter((s) => s.applied).length;
    for (const h of holds) {
      const kinds = (await holdRows(db, h.id)).map((x) => x.kind);
      expect(kinds.filter((k) => k === "release").length).toBe(1);
      expect(kinds.filter((k) => k === "charge").length).toBeLessThanOrEqual(1);
    }
    expect(await billing.getBalance(db, acct)).toEqual({ balance: N * X - applied * 50_000, held: 0, available: N * X - applied * 50_000 });
    await expectInvariants(db, [acct]);
  }, 60_000);

  test("double release and concurrent sweepers: one release row per hold", async () => {
    const db = pg.db;
    const acct = await fundedAccount(db, N * X);
    const holds = await openHolds(acct, "req_dr", new Date(Date.now() - 1000));
    const half = holds.slice(0, N / 2);
    const [rels, sweeps] = await Promise.all([
      Promise.all(half.map((h) => Promise.all([release(db, h, "a"), release(db, h, "b")]))),
      Promise.all([billing.sweepExpiredHolds(db), billing.sweepExpiredHolds(db), billing.sweepExpiredHolds(db)]),
    ]);
    const byRelease = rels.flat().filter(Boolean).length;
    for (const [a, b] of rels) expect(a && b).toBe(false);
    const swept = sweeps.reduce((x, y) => x + y, 0) + (await billing.sweepExpiredHolds(db));
    expect(byRelease + swept).toBe(N);
    for (const h of holds) expect((await holdRows(db, h.id)).map((r) => r.kind)).toEqual(["hold", "release"]);
    expect(await billing.getBalance(db, acct)).toEqual({ balance: N * X, held: 0, available: N * X });
    await expectInvariants(db, [acct]);
  }, 60_000);

  test("several sweepers (one per instance) over overlapping accounts: no deadlock, each hold released once", async () => {
    const db = pg.db;
    const accts = await Promise.all(Array.from({ length: 30 }, () => fundedAccount(db, 1_000_000)));
    for (let round = 0; round < 3; round++) {
      await Promise.all(accts.flatMap((a, j) => Array.from({ length: 6 }, (_, i) =>
        billing.hold(db, { accountId: a, amount: 1_000 + i, ref: `req_ms_${round}_${j}_${i}`, reason: "sweep test", expiresAt: new Date(Date.now() - 1_000 - ((i * 7919 + j * 104_729) % 100_000)) }))));
      const outcomes = await Promise.allSettled(Array.from({ length: 8 }, () => billing.sweepExpiredHolds(db, 40)));
      expect(outcomes.filter((o) => o.status === "rejected").map((o) => String((o as PromiseRejectedResult).reason))).toEqual([]);
      const swept = outcomes.reduce((n, o) => n + (o as PromiseFulfilledResult<number>).value, 0) + (await billing.sweepExpiredHolds(db, 10_000));
      expect(swept).toBe(accts.length * 6);
    }
    for (const a of accts) expect(await billing.getBalance(db, a)).toEqual({ balance: 1_000_000, held: 0, available: 1_000_000 });
    await expectInvariants(db, accts);
  }, 60_000);

  test("settle above the hold racing a grant on the same account: never a stale balance", async () => {
    const db = pg.db;
    // a settle that takes all of the available plus the grant's 1 was computed on the newest
    // balance but written over the older one (balance -1, CHECK violation) before the fix
    for (let i = 0; i < 60; i++) {
      const acct = await fundedAccount(db, 35_097);
      const h = await billing.hold(db, { accountId: acct, amount: i % 2 ? 0 : 1_000, ref: `req_sg_${i}`, reason: "race", expiresAt: null });
      const [g, s] = await Promise.all([billing.grant(db, acct, 1, "race grant"), settle(db, h, 35_098, "race settle")]);
      expect(g).toBeGreaterThan(0);
      expect(s.charged + s.shortfall).toBe(35_098);
      await expectInvariants(db, [acct]);
    }
  }, 60_000);

  test("sweeper racing new holds on the same accounts: held stays equal to the open holds", async () => {
    const db = pg.db;
    const accts = await Promise.all(Array.from({ length: 10 }, () => fundedAccount(db, 10_000_000)));
    for (let round = 0; round < 5; round++) {
      await Promise.all(accts.map((a, j) => billing.hold(db, { accountId: a, amount: 1_000, ref: `req_sh_old_${round}_${j}`, reason: "expired", expiresAt: new Date(Date.now() - 1_000) })));
      await Promise.all([
        billing.sweepExpiredHolds(db),
        ...accts.flatMap((a, j) => [0, 1, 2].map((k) => billing.hold(db, { accountId: a, amount: 7, ref: `req_sh_new_${round}_${j}_${k}`, reason: "new", expiresAt: null }))),
        ...accts.map((a) => billing.grant(db, a, 3, "grant")),
      ]);
      await billing.sweepExpiredHolds(db);
      await expectInvariants(db, accts);
    }
  }, 60_000);
});
