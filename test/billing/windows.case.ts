/**
 * Budget windows under random interleavings, on every database reelay supports
 * (windows-postgres.test.ts, windows-pglite.test.ts). Like leases.case.ts, fast-check generates
 * chunks of operations run concurrently against TWO engines on one database — approvals from two
 * keys for two models, settlements (below, at and above the worst case), releases, lease refills,
 * give-backs, heartbeats, other instances asking for credit back, syncs, replays — plus moves of the
 * engines' shared test clock across period ends (midnights in timezones with DST changes). One
 * account has a balance and four budgets: the account's daily, key 0's daily, key 0's lifetime
 * budget for model m1 only, and key 1's weekly.
 *
 * Checked after every chunk, in the database: for every window, spent + held ≤ limit; the account's
 * ledger sums to its balance and held amount; every unfinished approval is backed by an open hold
 * or lease reserving its worst case in the account and in each of its windows. In the model, at
 * every approval: what is approved and unfinished plus what finished requests were charged within
 * their worst case fits in the balance and in every window the request counts in. After the run:
 * every invariant of expectInvariants and expectWindowInvariants, one usage row per finished
 * request charged in full when within its worst case, and each charge counted in exactly the
 * windows its request was approved in — windows that contained the clock at the approval, whatever
 * the clock said at the settlement.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { sql } from "drizzle-orm";
import * as billing from "../../src/billing/index.ts";
import { requestLeaseReturns } from "../../src/billing/lease-statements.ts";
import { setBudgets } from "../../src/billing/budgets.ts";
import type { BudgetScope } from "../../src/billing/windows.ts";
import { createKey } from "../../src/accounts/api-keys.ts";
import { openDatabase, query, type Db } from "../../src/db/index.ts";
import { ApiError } from "../../src/errors.ts";
import { newEngine } from "./engine.case.ts";
import { accountState, expectInvariants, expectWindowInvariants, fundedAccount, windowRows, type BillingDb } from "./support.ts";

type Eng = 0 | 1;
type Key = 0 | 1;
type Model = "m1" | "m2";
type Op =
  | { op: "approve"; eng: Eng; key: Key; model: Model; amount: number }
  | { op: "settle"; pick: number; mode: "below" | "equal" | "above"; extra: number }
  | { op: "release"; pick: number }
  | { op: "refill"; eng: Eng; key: Key; model: Model; amount: number }
  | { op: "giveBack"; eng: Eng }
  | { op: "heartbeat"; eng: Eng }
  | { op: "reclaim"; eng: Eng }
  | { op: "sync"; eng: Eng }
  | { op: "tick"; ms: number }
  | { op: "replay"; pick: number };

const eng = fc.constantFrom<Eng>(0, 1);
const key = fc.constantFrom<Key>(0, 1);
const model = fc.constantFrom<Model>("m1", "m2");
const op: fc.Arbitrary<Op> = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant("approve" as const), eng, key, model, amount: fc.oneof({ arbitrary: fc.integer({ min: 1, max: 6_000 }), weight: 4 }, fc.integer({ min: 15_000, max: 90_000 })) }), weight: 10 },
  { arbitrary: fc.record({ op: fc.constant("settle" as const), pick: fc.nat(), mode: fc.constantFrom("below" as const, "equal" as const, "above" as const), extra: fc.integer({ min: 1, max: 30_000 }) }), weight: 6 },
  { arbitrary: fc.record({ op: fc.constant("release" as const), pick: fc.nat() }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("refill" as const), eng, key, model, amount: fc.integer({ min: 1, max: 6_000 }) }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("giveBack" as const), eng }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant("heartbeat" as const), eng }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("reclaim" as const), eng }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant("sync" as const), eng }), weight: 1 },
  // mostly small steps; sometimes past the next midnight somewhere (hours), or a week
  { arbitrary: fc.record({ op: fc.constant("tick" as const), ms: fc.oneof(fc.integer({ min: 1, max: 60_000 }), fc.integer({ min: 3_600_000, max: 30 * 3_600_000 }), fc.constant(7 * 86_400_000)) }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("replay" as const), pick: fc.nat() }), weight: 1 },
);

/** instants just before period ends in the zones used: DST switches in New York and Paris, a month's end, a Sunday night */
const STARTS = ["2026-03-08T06:59:50Z", "2026-03-29T00:59:50Z", "2026-10-31T22:59:50Z", "2026-11-01T05:59:50Z", "2026-01-31T23:59:59Z", "2026-05-31T21:59:58Z"].map((s) => Date.parse(s));
const ZONES = ["UTC", "America/New_York", "Europe/Paris", "Asia/Kolkata", "Australia/Lord_Howe"];

// tight limits (refusals, reclaims) or roomy ones (leases that refill and roll over)
const limit = (tight: number) => fc.oneof(fc.integer({ min: 0, max: tight }), fc.integer({ min: 400_000, max: 2_000_000 }));
const setup = fc.record({
  fund: limit(300_000),
  accountDay: limit(200_000),
  keyDay: limit(150_000),
  keyLifetimeM1: limit(100_000),
  key1Week: limit(150_000),
  tz: fc.tuple(fc.constantFrom(...ZONES), fc.constantFrom(...ZONES), fc.constantFrom(...ZONES)),
  start: fc.constantFrom(...STARTS),
});
type Setup = typeof setup extends fc.Arbitrary<infer T> ? T : never;

interface Open {
  approval: billing.Approval;
  eng: Eng;
  ref: string;
  windows: readonly string[];
  at: number;
}
interface Finished {
  ref: string;
  worst: number;
  mode: "below" | "equal" | "above" | "release";
  actual: number;
  windows: readonly string[];
  at: number;
}

type Inner = { leases: { slotFor(accountId: string, scope: BudgetScope): unknown; beat(): void; slots: Map<string, { lease: { dead: boolean; lastUse: number } | null }> } };
const inner = (e: billing.CreditEngine) => e as unknown as Inner;

let refs = 0;
const seen = { leaseApprovals: 0, exactApprovals: 0, leasesOpened: 0, refills: 0, reclaims: 0, budgetRefusals: 0, balanceRefusals: 0, rollovers: 0, shortfalls: 0 };

async function run(dbs: [Db, Db], check: Db, s: Setup, chunks: Op[][]) {
  let clock = s.start;
  const now = () => clock;
  const acct = await fundedAccount(check, s.fund);
  const keys = [(await createKey(check, acct, { name: "k0" })).record.id, (await createKey(check, acct, { name: "k1" })).record.id] as const;
  await setBudgets(check, { accountId: acct, keyId: null }, [{ period: "day", limit: s.accountDay, timezone: s.tz[0] }], clock);
  await setBudgets(check, { accountId: acct, keyId: keys[0] }, [{ period: "day", limit: s.keyDay, timezone: s.tz[1] }, { period: "lifetime", limit: s.keyLifetimeM1, models: ["m1"] }], clock);
  await setBudgets(check, { accountId: acct, keyId: keys[1] }, [{ period: "week", limit: s.key1Week, timezone: s.tz[2] }], clock);
  const engines = [newEngine(dbs[0], { reclaimWaitMs: 150 }, null, now), newEngine(dbs[1], { reclaimWaitMs: 150 }, null, now)] as const;
  const open: Open[] = [];
  const finished: Finished[] = [];
  let outstanding = 0, chargedWithin = 0;
  const perWindow = new Map<string, { outstanding: number; within: number }>();
  const limits = new Map<string, number>();
  const limitOf = async (id: string) => {
    if (!limits.has(id)) limits.set(id, Number((await query<{ l: number }>(check, sql`SELECT limit_amount::float8 AS l FROM budget_windows WHERE id = ${id}`))[0]!.l));
    return limits.get(id)!;
  };
  const pw = (id: string) => perWindow.get(id) ?? (perWindow.set(id, { outstanding: 0, within: 0 }), perWindow.get(id)!);
  const synced = new Set<string>();
  const take = (pick: number) => (open.length ? open.splice(pick % open.length, 1)[0]! : null);
  const finish = (o: Open, mode: Finished["mode"], actual: number) => {
    const worst = o.approval.amount;
    engines[o.eng].settle(o.approval, {
      mode: mode === "release" ? "release" : "settle", actual, reason: "windows property",
      usage: { accountId: acct, ref: o.ref, kind: "chat", model: "m", status: mode === "release" ? 502 : 200 },
    });
    outstanding -= worst;
    chargedWithin += Math.min(actual, worst);
    for (const w of o.windows) {
      pw(w).outstanding -= worst;
      pw(w).within += Math.min(actual, worst);
    }
    finished.push({ ref: o.ref, worst, mode, actual, windows: o.windows, at: o.at });
  };
  const scopeOf = (a: billing.Approval) => (a.slot as unknown as { scope: { ids: readonly string[] } }).scope.ids;

  const one = async (c: Op) => {
    switch (c.op) {
      case "approve": {
        const ref = `req_wp${++refs}_${Math.random().toString(36).slice(2, 8)}`;
        const at = clock;
        const r = await engines[c.eng].approve({ accountId: acct, keyId: keys[c.key], model: c.model, ref, amount: c.amount, reason: "windows property" }).then((a) => a, (e: unknown) => e);
        if (r instanceof ApiError) {
          expect({ status: r.status, code: ["insufficient_quota", "budget_exceeded"].includes(r.code!) }).toEqual({ status: 402, code: true });
          if (r.code === "budget_exceeded") seen.budgetRefusals++;
          else seen.balanceRefusals++;
          return;
        }
        if (!r || typeof r !== "object" || !("kind" in r)) throw r;
        const a = r as billing.Approval;
        const windows = scopeOf(a);
        outstanding += a.amount;
        expect({ committed: outstanding + chargedWithin <= s.fund }).toEqual({ committed: true });
        for (const w of windows) {
          pw(w).outstanding += a.amount;
          // no overshoot across the two instances: everything promised in the window fits in its limit
          expect({ window: w, committed: pw(w).outstanding + pw(w).within <= (await limitOf(w)) }).toEqual({ window: w, committed: true });
        }
        open.push({ approval: a, eng: c.eng, ref, windows, at });
        return;
      }
      case "settle": {
        const o = take(c.pick);
        if (!o) return;
        const w = o.approval.amount;
        return finish(o, c.mode, c.mode === "below" ? Math.floor(w / 2) : c.mode === "equal" ? w : w + c.extra);
      }
      case "release": {
        const o = take(c.pick);
        if (o) finish(o, "release", 0);
        return;
      }
      case "refill": {
        const e = engines[c.eng];
        const scope = await e.windows.scope(acct, keys[c.key], c.model);
        return e.acquire(inner(e).leases.slotFor(acct, scope) as never, c.amount);
      }
      case "giveBack": {
        const e = inner(engines[c.eng]);
        for (const slot of e.leases.slots.values()) if (slot.lease && !slot.lease.dead) slot.lease.lastUse -= 60_000;
        return e.leases.beat();
      }
      case "heartbeat":
        return engines[c.eng].beat();
      case "reclaim":
        await requestLeaseReturns(dbs[c.eng], acct, engines[c.eng].owner);
        return;
      case "sync": {
        const before = finished.map((f) => f.ref);
        await engines[c.eng].sync();
        await engines[1 - c.eng]!.sync();
        for (const ref of before) synced.add(ref);
        return;
      }
      case "tick": {
        const before = clock;
        clock += c.ms;
        if (c.ms >= 3_600_000 || Math.floor(before / 86_400_000) !== Math.floor(clock / 86_400_000)) seen.rollovers++;
        return;
      }
      case "replay": {
        const landed = finished.filter((f) => synced.has(f.ref));
        const f = landed[c.pick % Math.max(1, landed.length)];
        if (!f) return;
        const st: billing.Settlement = { holdId: null, mode: f.mode === "release" ? "release" : "settle", actual: f.actual, cover: 0, reason: "replay", usage: { accountId: acct, ref: f.ref, kind: "chat", model: "m", status: 200 } };
        expect((await billing.settleBatch(check, [st])).applied).toEqual([]);
        return;
      }
    }
  };

  /** after every chunk, in the database: no window past its limit, the ledger exact, every unfinished approval backed */
  const stepChecks = async () => {
    for (const w of await windowRows(check, [acct])) expect({ window: w.id, within: w.spent + w.held <= w.limit }).toEqual({ window: w.id, within: true });
    const st = await accountState(check, acct);
    expect({ ledger: st.ledgerAmount, ledgerHeld: st.ledgerHeld }).toEqual({ ledger: st.balance, ledgerHeld: st.held });
    const need = new Map<string, { amount: number; windows: readonly string[] }>();
    for (const { approval: a, windows } of open) {
      const id = a.kind === "lease" ? a.lease.id : a.holdId;
      need.set(id, { amount: (need.get(id)?.amount ?? 0) + a.amount, windows });
    }
    if (need.size === 0) return;
    const rows = await query<{ id: string; state: string; amount: number; windows: unknown }>(check, sql`SELECT id, state, amount::float8 AS amount, windows FROM holds WHERE id IN ${sql.raw(`(${[...need.keys()].map((k) => `'${k}'`).join(",")})`)}`);
    const got = new Map(rows.map((r) => [r.id, r]));
    for (const [id, n] of need) {
      const h = got.get(id);
      const listed = h ? (Array.isArray(h.windows) ? h.windows : h.windows ? String(h.windows).replace(/[{}]/g, "").split(",").filter(Boolean) : []) : [];
      expect({ id, state: h?.state, covers: Number(h?.amount) >= n.amount, windows: [...listed].sort() }).toEqual({ id, state: "open", covers: true, windows: [...n.windows].sort() });
    }
  };

  try {
    for (const chunk of chunks) {
      await Promise.all(chunk.map(one));
      await stepChecks();
    }
    while (open.length) finish(take(0)!, "release", 0);
    await Promise.all(engines.map((e) => e.sync()));
    await expectInvariants(check, [acct]);
    await expectWindowInvariants(check, [acct]);

    const usage = await query<{ ref: string; cost: number; windows: unknown }>(check, sql`SELECT ref, cost::float8 AS cost, budget_windows AS windows FROM usage_records WHERE account_id = ${acct}`);
    const byRef = new Map(usage.map((u) => [u.ref, u]));
    expect(byRef.size).toBe(finished.length);
    const bounds = new Map((await query<{ id: string; s: number; e: number | null }>(check, sql`
      SELECT id, (extract(epoch FROM starts_at) * 1000)::float8 AS s, (extract(epoch FROM ends_at) * 1000)::float8 AS e FROM budget_windows WHERE account_id = ${acct}`)).map((r) => [r.id, r]));
    for (const f of finished) {
      const u = byRef.get(f.ref)!;
      const listed = Array.isArray(u.windows) ? u.windows : u.windows ? String(u.windows).replace(/[{}]/g, "").split(",").filter(Boolean) : [];
      // the charge counts in the windows of the approval, and those contained the clock when it was approved
      expect({ ref: f.ref, windows: [...listed].sort() }).toEqual({ ref: f.ref, windows: [...f.windows].sort() });
      for (const w of f.windows) {
        const b = bounds.get(w)!;
        expect({ ref: f.ref, w, inWindow: Number(b.s) <= f.at && (b.e === null || f.at < Number(b.e)) || w.endsWith("@life") }).toEqual({ ref: f.ref, w, inWindow: true });
      }
      if (f.mode === "release") expect({ ref: f.ref, cost: Number(u.cost) }).toEqual({ ref: f.ref, cost: 0 });
      else if (f.actual <= f.worst) expect({ ref: f.ref, cost: Number(u.cost) }).toEqual({ ref: f.ref, cost: f.actual });
      else expect(Number(u.cost)).toBeGreaterThanOrEqual(f.worst);
    }
  } finally {
    while (open.length) finish(take(0)!, "release", 0);
    for (const e of engines) {
      await e.stop();
      for (const k of ["leaseApprovals", "exactApprovals", "leasesOpened", "refills", "reclaims", "shortfalls"] as const) seen[k] += e.stats[k];
    }
  }
  expect(await billing.getBalance(check, acct)).toMatchObject({ held: 0 });
  await expectInvariants(check, [acct]);
  await expectWindowInvariants(check, [acct]);
  for (const w of await windowRows(check, [acct])) expect({ window: w.id, held: w.held }).toEqual({ window: w.id, held: 0 });
}

/**
 * The generated cases are the same on every run unless FC_SEED asks for others: that every kind of
 * step below is reached is checked after the runs, and 15 random runs on PGlite once reached no
 * balance refusal (CI). Explore with FC_SEED=$RANDOM; a failing seed is printed by fast-check.
 */
const SEED = Number(process.env.FC_SEED ?? 20261127);

export function describeWindowProperties(name: string, open: () => Promise<BillingDb>, opts: { numRuns: number; maxChunks: number; separateConnections: boolean }) {
  describe(`budget windows on ${name}`, () => {
    let bdb: BillingDb;
    let second: { db: Db; close(): Promise<void> } | null = null;
    beforeAll(async () => {
      bdb = await open();
      if (opts.separateConnections) second = await openDatabase({ databaseUrl: bdb.url!, dataDir: "/nonexistent", poolSize: 8 });
    }, 60_000);
    afterAll(async () => {
      await second?.close();
      await bdb?.dispose();
    });

    test("two instances, random interleavings with period rollovers: every window's spent + held ≤ limit after every step, ledger exact, charges in the windows of their approval", async () => {
      for (const k of Object.keys(seen) as Array<keyof typeof seen>) seen[k] = 0;
      await fc.assert(
        fc.asyncProperty(setup, fc.array(fc.array(op, { minLength: 1, maxLength: 10 }), { minLength: 2, maxLength: opts.maxChunks }), async (s, chunks) => {
          await run([bdb.db, second?.db ?? bdb.db], bdb.db, s, chunks);
        }),
        { numRuns: opts.numRuns, seed: SEED },
      );
      console.log(`budget windows on ${name}, ${opts.numRuns} runs, seed ${SEED} (FC_SEED=… for others): ${JSON.stringify(seen)}`);
      // (shortfalls — usage above the worst case past what a window had left — show up in most runs, not all: counted, not required)
      for (const [k, n] of Object.entries(seen)) if (k !== "shortfalls") expect({ [k]: n > 0 }).toEqual({ [k]: true });
    }, 600_000);
  });
}
