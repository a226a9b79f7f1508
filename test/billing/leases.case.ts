/**
 * Credit leases under random interleavings, on every database reelay supports (leases-postgres.test.ts,
 * leases-pglite.test.ts). fast-check generates chunks of operations run concurrently against TWO
 * engines (two instances, each with its own connections where the database has several) on one
 * database: approvals, settlements (below, at and above the worst case), releases, lease refills,
 * idle give-backs and closes, heartbeats, other instances asking for credit back, syncs, the
 * sweeper, and replays of landed settlements. The engines' own timers (heartbeat, flush) run too.
 *
 * Checked during a run: the worst cases approved and not finished plus what finished requests were
 * charged within their worst case never exceed the account's funds (no overspend across the two
 * instances), and after each chunk every unfinished approval is backed by an open hold or lease
 * in the database that covers it. After it: balance == Σ ledger amounts, held == Σ ledger held changes == Σ open holds
 * and leases (expectInvariants), each ref charged at most once and exactly one usage row per
 * finished request with the charge it should have (a settlement within its worst case is charged
 * in full), Σ charges == funds − balance, a replay charges nothing, the client's `held` is 0 once
 * idle, and the operator's `held` is 0 once both instances stopped (their leases closed).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { sql } from "drizzle-orm";
import * as billing from "../../src/billing/index.ts";
import { requestLeaseReturns } from "../../src/billing/lease-statements.ts";
import { openDatabase, query, type Db } from "../../src/db/index.ts";
import { ApiError } from "../../src/errors.ts";
import { newEngine } from "./engine.case.ts";
import { expectInvariants, fundedAccount, type BillingDb } from "./support.ts";

type Eng = 0 | 1;
type Acct = 0 | 1;
type Op =
  | { op: "approve"; eng: Eng; acct: Acct; amount: number }
  | { op: "settle"; pick: number; mode: "below" | "equal" | "above"; extra: number }
  | { op: "release"; pick: number }
  | { op: "refill"; eng: Eng; acct: Acct; amount: number }
  | { op: "giveBack"; eng: Eng; acct: Acct }
  | { op: "heartbeat"; eng: Eng }
  | { op: "reclaim"; eng: Eng; acct: Acct }
  | { op: "sync"; eng: Eng }
  | { op: "sweep" }
  | { op: "replay"; pick: number };

const eng = fc.constantFrom<Eng>(0, 1);
const acct = fc.constantFrom<Acct>(0, 1);
const op: fc.Arbitrary<Op> = fc.oneof(
  // mostly small requests (leases), sometimes one that needs most of the account (exact hold, reclaim, 402)
  { arbitrary: fc.record({ op: fc.constant("approve" as const), eng, acct, amount: fc.oneof({ arbitrary: fc.integer({ min: 1, max: 8_000 }), weight: 4 }, fc.integer({ min: 20_000, max: 150_000 })) }), weight: 10 },
  { arbitrary: fc.record({ op: fc.constant("settle" as const), pick: fc.nat(), mode: fc.constantFrom("below" as const, "equal" as const, "above" as const), extra: fc.integer({ min: 1, max: 40_000 }) }), weight: 6 },
  { arbitrary: fc.record({ op: fc.constant("release" as const), pick: fc.nat() }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("refill" as const), eng, acct, amount: fc.integer({ min: 1, max: 8_000 }) }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("giveBack" as const), eng, acct }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("heartbeat" as const), eng }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant("reclaim" as const), eng, acct }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant("sync" as const), eng }), weight: 1 },
  { arbitrary: fc.constant({ op: "sweep" as const }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant("replay" as const), pick: fc.nat() }), weight: 1 },
);
const funds = fc.tuple(fc.integer({ min: 0, max: 200_000 }), fc.integer({ min: 0, max: 200_000 }));

interface Open {
  approval: billing.Approval;
  eng: Eng;
  acct: Acct;
  ref: string;
}
interface Finished {
  eng: Eng;
  acct: Acct;
  ref: string;
  worst: number;
  mode: "below" | "equal" | "above" | "release";
  actual: number;
}

/** an engine's internals the operations drive directly (what its own timers and requests call) */
type Inner = {
  acquire(slot: unknown, amount: number): Promise<void>;
  slotFor(accountId: string): { lease: { dead: boolean; lastUse: number } | null };
  beat(): void;
};
const inner = (e: billing.CreditEngine) => e as unknown as Inner;

let refs = 0;

/** what the runs exercised, summed over a test's runs (so the property cannot pass on a path it never took) */
const seen = { leaseApprovals: 0, exactApprovals: 0, leasesOpened: 0, refills: 0, returns: 0, reclaims: 0, refused: 0, shortfalls: 0, asked: 0 };

async function run(dbs: [Db, Db], check: Db, fund: [number, number], chunks: Op[][]) {
  const accts = [await fundedAccount(check, fund[0]), await fundedAccount(check, fund[1])] as const;
  const engines = [newEngine(dbs[0], { reclaimWaitMs: 150 }), newEngine(dbs[1], { reclaimWaitMs: 150 })] as const;
  const open: Open[] = [];
  const finished: Finished[] = [];
  // per account: worst cases approved and not finished, and charges of finished requests within their worst case
  const outstanding = [0, 0];
  const chargedWithin = [0, 0];
  const synced = new Set<string>();
  const take = (pick: number) => (open.length ? open.splice(pick % open.length, 1)[0]! : null);
  const finish = (o: Open, mode: Finished["mode"], actual: number) => {
    const worst = o.approval.amount;
    engines[o.eng].settle(o.approval, {
      mode: mode === "release" ? "release" : "settle", actual, reason: "lease property",
      usage: { accountId: accts[o.acct], ref: o.ref, kind: "chat", model: "m", status: mode === "release" ? 502 : 200 },
    });
    outstanding[o.acct]! -= worst;
    chargedWithin[o.acct]! += Math.min(actual, worst);
    finished.push({ eng: o.eng, acct: o.acct, ref: o.ref, worst, mode, actual });
  };

  const one = async (c: Op) => {
    switch (c.op) {
      case "approve": {
        const ref = `req_lp${++refs}_${Math.random().toString(36).slice(2, 8)}`;
        const r = await engines[c.eng].approve({ accountId: accts[c.acct], ref, amount: c.amount, reason: "lease property" }).then((a) => a, (e: unknown) => e);
        if (r instanceof ApiError) {
          seen.refused++;
          return void expect({ status: r.status, code: r.code }).toEqual({ status: 402, code: "insufficient_quota" });
        }
        if (!r || typeof r !== "object" || !("kind" in r)) throw r;
        const a = r as billing.Approval;
        outstanding[c.acct]! += a.amount;
        // no overspend across the two instances: everything promised fits in the funds
        expect({ acct: c.acct, committed: outstanding[c.acct]! + chargedWithin[c.acct]! <= fund[c.acct] }).toEqual({ acct: c.acct, committed: true });
        open.push({ approval: a, eng: c.eng, acct: c.acct, ref });
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
        const e = inner(engines[c.eng]);
        return e.acquire(e.slotFor(accts[c.acct]), c.amount);
      }
      case "giveBack": {
        // the lease looks idle to its owner: its next heartbeat gives the free part back (or closes it when nothing is in flight)
        const e = inner(engines[c.eng]);
        const l = e.slotFor(accts[c.acct]).lease;
        if (l && !l.dead) l.lastUse -= 60_000;
        return e.beat();
      }
      case "heartbeat":
        return inner(engines[c.eng]).beat();
      case "reclaim":
        // what a request short of credit on this instance does: ask the other's leases back
        if ((await requestLeaseReturns(dbs[c.eng], accts[c.acct], engines[c.eng].owner)) > 0) seen.asked++;
        return;
      case "sync": {
        const before = finished.filter((f) => f.eng === c.eng).map((f) => f.ref);
        await engines[c.eng].sync();
        for (const ref of before) synced.add(ref);
        return;
      }
      case "sweep": {
        // the instances renew their leases: nothing of theirs has expired, the sweeper leaves them alone
        const expired = await query<{ n: number }>(check, sql`SELECT count(*)::int AS n FROM holds WHERE account_id IN (${accts[0]}, ${accts[1]}) AND state = 'open' AND expires_at < now()`);
        expect(expired[0]!.n).toBe(0);
        await billing.sweepExpiredHolds(check);
        return;
      }
      case "replay": {
        const landed = finished.filter((f) => synced.has(f.ref));
        const f = landed[c.pick % Math.max(1, landed.length)];
        if (!f) return;
        // a journal replayed after its settlement landed (a restart, another instance) does nothing
        const s: billing.Settlement = { holdId: null, mode: f.mode === "release" ? "release" : "settle", actual: f.actual, cover: 0, reason: "replay", usage: { accountId: accts[f.acct], ref: f.ref, kind: "chat", model: "m", status: 200 } };
        expect((await billing.settleBatch(check, [s])).applied).toEqual([]);
        return;
      }
    }
  };

  /**
   * Every approval not finished yet is backed in the database, whatever the instances' timers are
   * doing: its exact hold is open for its worst case, its lease is open and reserves at least the
   * worst cases of the requests approved from it (a lease's amount falls only when a settlement
   * it covered lands or its owner gives idle credit back).
   */
  const backed = async () => {
    const need = new Map<string, number>();
    for (const { approval: a } of open) {
      const id = a.kind === "lease" ? a.lease.id : a.holdId;
      need.set(id, (need.get(id) ?? 0) + a.amount);
    }
    if (need.size === 0) return;
    const rows = await query<{ id: string; state: string; amount: number }>(check, sql`SELECT id, state, amount::float8 AS amount FROM holds WHERE id IN ${sql.raw(`(${[...need.keys()].map((k) => `'${k}'`).join(",")})`)}`);
    const got = new Map(rows.map((r) => [r.id, r]));
    for (const [id, amount] of need) expect({ id, state: got.get(id)?.state, covers: Number(got.get(id)?.amount) >= amount }).toEqual({ id, state: "open", covers: true });
  };

  try {
    for (const chunk of chunks) {
      await Promise.all(chunk.map(one));
      await backed();
    }
    while (open.length) finish(take(0)!, "release", 0);
    await Promise.all(engines.map((e) => e.sync()));
    await expectInvariants(check, [...accts]);

    const usage = await query<{ ref: string; n: number; cost: number }>(check, sql`
      SELECT ref, count(*)::int AS n, sum(cost)::float8 AS cost FROM usage_records WHERE account_id IN (${accts[0]}, ${accts[1]}) GROUP BY ref`);
    const byRef = new Map(usage.map((u) => [u.ref, { n: u.n, cost: Number(u.cost) }]));
    expect(byRef.size).toBe(finished.length);
    for (const f of finished) {
      const u = byRef.get(f.ref);
      expect({ ref: f.ref, rows: u?.n }).toEqual({ ref: f.ref, rows: 1 });
      // within the worst case the whole actual is charged (the approval reserved it); above it, at least the worst case
      if (f.mode === "release") expect({ ref: f.ref, cost: u!.cost }).toEqual({ ref: f.ref, cost: 0 });
      else if (f.actual <= f.worst) expect({ ref: f.ref, cost: u!.cost }).toEqual({ ref: f.ref, cost: f.actual });
      else expect(u!.cost).toBeGreaterThanOrEqual(f.worst);
    }
    for (const i of [0, 1] as const) {
      const spent = finished.filter((f) => f.acct === i).reduce((n, f) => n + byRef.get(f.ref)!.cost, 0);
      const view = await billing.clientBalance(check, accts[i]);
      // idle: nothing in flight as the client sees it, and the balance is final
      expect({ acct: i, balance: view.balance, held: view.held }).toEqual({ acct: i, balance: fund[i] - spent, held: 0 });
    }
  } finally {
    // (after a failed check too, so a shrinking run starts clean: no lease left to expire)
    while (open.length) finish(take(0)!, "release", 0);
    for (const e of engines) {
      await e.stop();
      for (const k of ["leaseApprovals", "exactApprovals", "leasesOpened", "refills", "returns", "reclaims", "shortfalls"] as const) seen[k] += e.stats[k];
    }
  }
  for (const id of accts) expect(await billing.getBalance(check, id)).toMatchObject({ held: 0 });
  await expectInvariants(check, [...accts]);
}

/**
 * The generated cases are the same on every run unless FC_SEED asks for others: that every kind of
 * step is reached is checked after the runs, which random cases do not always do (the budget-window
 * twin of this test once reached no balance refusal in CI). Explore with FC_SEED=$RANDOM.
 */
const SEED = Number(process.env.FC_SEED ?? 20261127);

export function describeLeaseProperties(name: string, open: () => Promise<BillingDb>, opts: { numRuns: number; maxChunks: number; separateConnections: boolean }) {
  describe(`credit leases on ${name}`, () => {
    let bdb: BillingDb;
    let second: { db: Db; close(): Promise<void> } | null = null;
    beforeAll(async () => {
      bdb = await open();
      // the second instance gets connections of its own, as a second process would
      if (opts.separateConnections) second = await openDatabase({ databaseUrl: bdb.url!, dataDir: "/nonexistent", poolSize: 8 });
    }, 60_000);
    afterAll(async () => {
      await second?.close();
      await bdb?.dispose();
    });

    test("two instances, random interleavings of approve / settle / release / refill / give-back / heartbeat / reclaim: no overspend, ledger exact, each ref once, idle held 0", async () => {
      for (const k of Object.keys(seen) as Array<keyof typeof seen>) seen[k] = 0;
      await fc.assert(
        fc.asyncProperty(funds, fc.array(fc.array(op, { minLength: 1, maxLength: 10 }), { minLength: 2, maxLength: opts.maxChunks }), async (fund, chunks) => {
          await run([bdb.db, second?.db ?? bdb.db], bdb.db, fund, chunks);
        }),
        { numRuns: opts.numRuns, seed: SEED },
      );
      console.log(`credit leases on ${name}, ${opts.numRuns} runs, seed ${SEED} (FC_SEED=… for others): ${JSON.stringify(seen)}`);
      for (const [k, n] of Object.entries(seen)) expect({ [k]: n > 0 }).toEqual({ [k]: true });
    }, 300_000);
  });
}
