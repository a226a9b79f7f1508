/**
 * One billing suite, run on every database reelay supports (postgres.test.ts, pglite.test.ts):
 * fast-check generates command sequences over a few accounts; a sequential run must match an
 * exact model, and a run in concurrent chunks must keep every invariant.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import * as billing from "../../src/billing/index.ts";
import { ApiError } from "../../src/errors.ts";
import { accountState, expectInvariants, fundedAccount, holdRows, release as releaseHold, settle as settleHold, type BillingDb } from "./support.ts";

type Cmd =
  | { op: "grant"; acct: number; amount: number }
  | { op: "adjust"; acct: number; amount: number }
  | { op: "hold"; acct: number; amount: number; expires: boolean }
  | { op: "settle"; hold: number; mode: "below" | "equal" | "above"; extra: number }
  | { op: "release"; hold: number }
  | { op: "doubleSettle"; hold: number; extra: number }
  | { op: "doubleRelease"; hold: number }
  | { op: "settleVsRelease"; hold: number };

const ACCOUNTS = 4;
const acct = fc.integer({ min: 0, max: ACCOUNTS - 1 });
const holdRef = fc.nat({ max: 1_000 });
const money = fc.integer({ min: 1, max: 400_000 });
const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant("grant" as const), acct, amount: money }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("adjust" as const), acct, amount: fc.integer({ min: -300_000, max: 300_000 }).filter((n) => n !== 0) }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant("hold" as const), acct, amount: fc.integer({ min: 0, max: 300_000 }), expires: fc.boolean() }), weight: 5 },
  { arbitrary: fc.record({ op: fc.constant("settle" as const), hold: holdRef, mode: fc.constantFrom("below" as const, "equal" as const, "above" as const), extra: money }), weight: 4 },
  { arbitrary: fc.record({ op: fc.constant("release" as const), hold: holdRef }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("doubleSettle" as const), hold: holdRef, extra: money }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant("doubleRelease" as const), hold: holdRef }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant("settleVsRelease" as const), hold: holdRef }), weight: 1 },
);
const initial = fc.array(fc.integer({ min: 0, max: 600_000 }), { minLength: ACCOUNTS, maxLength: ACCOUNTS });

interface Model {
  balance: number[];
  held: number[];
  holds: { hold: billing.Hold; id: string; acct: number; amount: number; state: "open" | "settled" | "released" }[];
}

const actualFor = (amount: number, c: { mode: "below" | "equal" | "above"; extra: number }) =>
  c.mode === "equal" ? amount : c.mode === "below" ? Math.floor(amount / 2) : amount + c.extra;

/** Everything a run observed about each hold, checked against the ledger afterwards. */
interface Observed {
  closes: Map<string, number>;
  settlements: { holdId: string; amount: number; actual: number; s: billing.SingleSettlement }[];
}

async function runOne(db: BillingDb["db"], accts: string[], model: Model, c: Cmd, seen: Observed, exact: boolean) {
  const pick = (i: number) => model.holds[i % Math.max(1, model.holds.length)];
  const close = (id: string) => seen.closes.set(id, (seen.closes.get(id) ?? 0) + 1);
  const settle = async (h: Model["holds"][number], actual: number) => {
    const s = await settleHold(db, h.hold, actual, "property settle");
    seen.settlements.push({ holdId: h.id, amount: h.amount, actual, s });
    if (s.applied) close(h.id);
    if (exact) {
      if (h.state === "open") {
        const avail = model.balance[h.acct]! - model.held[h.acct]!;
        const charged = Math.min(actual, h.amount + avail);
        expect(s).toEqual({ applied: true, fromHold: true, charged, shortfall: actual - charged, released: Math.max(0, h.amount - charged) });
        model.balance[h.acct]! -= charged;
        model.held[h.acct]! -= h.amount;
        h.state = "settled";
      } else expect(s.applied).toBe(false);
    }
    return s;
  };
  const release = async (h: Model["holds"][number]) => {
    const ok = await releaseHold(db, h.hold, "property release");
    if (ok) close(h.id);
    if (exact) {
      expect(ok).toBe(h.state === "open");
      if (ok) (model.held[h.acct]! -= h.amount), (h.state = "released");
    }
    return ok;
  };
  switch (c.op) {
    case "grant": {
      const b = await billing.grant(db, accts[c.acct]!, c.amount, "property grant");
      if (exact) expect(b).toBe((model.balance[c.acct]! += c.amount));
      return;
    }
    case "adjust": {
      const r = await billing.adjust(db, accts[c.acct]!, c.amount, "property adjust").then((b) => b, (e: unknown) => e);
      if (r instanceof ApiError) expect(r.status).toBe(400);
      else if (typeof r !== "number") throw r;
      if (exact) {
        const ok = model.balance[c.acct]! + c.amount >= model.held[c.acct]!;
        expect(typeof r === "number").toBe(ok);
        if (ok) expect(r).toBe((model.balance[c.acct]! += c.amount));
      }
      return;
    }
    case "hold": {
      const ref = `req_${crypto.randomUUID()}`;
      const r = await billing.hold(db, { accountId: accts[c.acct]!, amount: c.amount, ref, reason: "property hold", expiresAt: c.expires ? new Date(Date.now() + 3_600_000) : null }).then((h) => h, (e: unknown) => e);
      if (r instanceof ApiError) {
        expect([r.status, r.type]).toEqual([402, "insufficient_quota"]);
        expect(r.message).toMatch(/only \$[\d.]+ \(\d+ micro-dollars\) is available/);
      } else if (!(r && typeof r === "object" && "id" in r)) throw r;
      if (exact) {
        const avail = model.balance[c.acct]! - model.held[c.acct]!;
        expect(r instanceof ApiError).toBe(avail < c.amount);
        if (r instanceof ApiError) expect(r.message).toContain(`(${avail} micro-dollars) is available`);
        else model.held[c.acct]! += c.amount;
      }
      if (!(r instanceof ApiError)) model.holds.push({ hold: r as billing.Hold, id: (r as billing.Hold).id, acct: c.acct, amount: c.amount, state: "open" });
      return;
    }
    case "settle": {
      const h = pick(c.hold);
      if (h) await settle(h, actualFor(h.amount, c));
      return;
    }
    case "release": {
      const h = pick(c.hold);
      if (h) await release(h);
      return;
    }
    case "doubleSettle": {
      const h = pick(c.hold);
      if (!h) return;
      const wasOpen = h.state === "open";
      // the model is updated by whichever call runs first; both calls see the same prior state
      const rs = exact ? [await settle(h, h.amount + c.extra), await settle(h, Math.floor(h.amount / 3))] : await Promise.all([settle(h, h.amount + c.extra), settle(h, Math.floor(h.amount / 3))]);
      if (exact) expect(rs.filter((s) => s.applied).length).toBe(wasOpen ? 1 : 0);
      else expect(rs.filter((s) => s.applied).length).toBeLessThanOrEqual(1);
      return;
    }
    case "doubleRelease": {
      const h = pick(c.hold);
      if (!h) return;
      const wasOpen = h.state === "open";
      const rs = exact ? [await release(h), await release(h)] : await Promise.all([release(h), release(h)]);
      if (exact) expect(rs.filter(Boolean).length).toBe(wasOpen ? 1 : 0);
      else expect(rs.filter(Boolean).length).toBeLessThanOrEqual(1);
      return;
    }
    case "settleVsRelease": {
      const h = pick(c.hold);
      if (!h) return;
      if (exact) {
        const wasOpen = h.state === "open";
        const s = await settle(h, h.amount);
        expect([s.applied, await release(h)]).toEqual([wasOpen, false]);
      } else {
        const [s, r] = await Promise.all([settle(h, h.amount), release(h)]);
        expect(s.applied && r).toBe(false);
      }
      return;
    }
  }
}

async function checkRun(db: BillingDb["db"], accts: string[], model: Model, seen: Observed, exact: boolean) {
  await expectInvariants(db, accts);
  if (exact)
    for (const [i, id] of accts.entries()) {
      const s = await accountState(db, id);
      expect({ balance: s.balance, held: s.held }).toEqual({ balance: model.balance[i]!, held: model.held[i]! });
    }
  for (const [id, n] of seen.closes) expect({ id, n }).toEqual({ id, n: 1 });
  for (const { holdId, amount, actual, s } of seen.settlements) {
    if (!s.applied) continue;
    const rows = await holdRows(db, holdId);
    // within the hold, the whole actual is always charged; above it, at least the hold is
    if (actual <= amount) expect(s).toEqual({ applied: true, fromHold: true, charged: actual, shortfall: 0, released: amount - actual });
    else expect(s.charged).toBeGreaterThanOrEqual(amount);
    expect(s.charged + s.shortfall).toBe(actual);
    expect(0 - (rows.find((r) => r.kind === "charge")?.amount ?? 0) + 0).toBe(s.charged);
    const shortfall = rows.find((r) => r.kind === "shortfall");
    if (s.shortfall > 0) expect(shortfall?.reason).toStartWith(`shortfall: ${s.shortfall} micro-dollars`);
    else expect(shortfall).toBeUndefined();
  }
}

async function newRun(db: BillingDb["db"], funds: number[]) {
  const accts = await Promise.all(funds.map((f) => fundedAccount(db, f)));
  const model: Model = { balance: [...funds], held: funds.map(() => 0), holds: [] };
  return { accts, model, seen: { closes: new Map(), settlements: [] } as Observed };
}

export function describeBillingInvariants(kind: string, open: () => Promise<BillingDb>, opts: { numRuns: number; maxCommands: number }) {
  describe(`billing invariants on ${kind}`, () => {
    let bdb: BillingDb;
    beforeAll(async () => {
      bdb = await open();
    }, 60_000);
    afterAll(async () => {
      await bdb?.dispose();
    });

    test("sequential command sequences match the exact model", async () => {
      await fc.assert(
        fc.asyncProperty(initial, fc.array(cmd, { minLength: 5, maxLength: opts.maxCommands }), async (funds, cmds) => {
          const { accts, model, seen } = await newRun(bdb.db, funds);
          for (const c of cmds) await runOne(bdb.db, accts, model, c, seen, true);
          await checkRun(bdb.db, accts, model, seen, true);
        }),
        { numRuns: opts.numRuns },
      );
    }, 60_000);

    test("command sequences run in concurrent chunks keep every invariant", async () => {
      await fc.assert(
        fc.asyncProperty(initial, fc.array(fc.array(cmd, { minLength: 1, maxLength: 8 }), { minLength: 2, maxLength: Math.ceil(opts.maxCommands / 5) }), async (funds, chunks) => {
          const { accts, model, seen } = await newRun(bdb.db, funds);
          for (const chunk of chunks) {
            // holds created in this chunk become targets for the next one
            const snapshot: Model = { ...model, holds: [...model.holds] };
            await Promise.all(chunk.map((c) => runOne(bdb.db, accts, c.op === "hold" ? model : snapshot, c, seen, false)));
          }
          await checkRun(bdb.db, accts, model, seen, false);
        }),
        { numRuns: opts.numRuns },
      );
    }, 60_000);

    test("200 holds at once on an account funded for exactly 50: 50 succeed, no overspend", async () => {
      const X = 150_000;
      const id = await fundedAccount(bdb.db, 50 * X);
      const rs = await Promise.allSettled(Array.from({ length: 200 }, (_, i) => billing.hold(bdb.db, { accountId: id, amount: X, ref: `req_fifty_${i}`, reason: "t", expiresAt: null })));
      expect(rs.filter((r) => r.status === "fulfilled").length).toBe(50);
      for (const r of rs) if (r.status === "rejected") expect((r.reason as ApiError).status).toBe(402);
      expect(await billing.getBalance(bdb.db, id)).toEqual({ balance: 50 * X, held: 50 * X, available: 0 });
      // settle all 50 above the hold at once: the first ones take the extra, nobody goes negative
      const held = rs.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
      await billing.grant(bdb.db, id, X, "top-up");
      const ss = await Promise.all(held.map((h) => settleHold(bdb.db, h, X + 10_000, "t")));
      expect(ss.reduce((n, s) => n + s.charged, 0)).toBe(51 * X);
      expect(ss.reduce((n, s) => n + s.shortfall, 0)).toBe(50 * 10_000 - X);
      expect(await billing.getBalance(bdb.db, id)).toEqual({ balance: 0, held: 0, available: 0 });
      await expectInvariants(bdb.db, [id]);
    }, 60_000);

    test("a hold in a transaction that rolls back leaves no trace", async () => {
      const id = await fundedAccount(bdb.db, 1_000);
      const err = await bdb.db
        .transaction(async (tx) => {
          await billing.hold(tx, { accountId: id, amount: 600, ref: "vid_rollback", reason: "t", expiresAt: null });
          throw new Error("job insert failed");
        })
        .catch((e: Error) => e);
      expect(err.message).toBe("job insert failed");
      expect(await billing.getBalance(bdb.db, id)).toEqual({ balance: 1_000, held: 0, available: 1_000 });
      // the same owner may hold again: the ref was never taken
      const h = await billing.hold(bdb.db, { accountId: id, amount: 600, ref: "vid_rollback", reason: "t", expiresAt: null });
      expect((await settleHold(bdb.db, h, 600, "t")).charged).toBe(600);
      await expectInvariants(bdb.db, [id]);
    }, 60_000);
  });
}
