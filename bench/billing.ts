/**
 * Billing throughput, the engine alone (no HTTP): approve + settle pairs per second against a real
 * Postgres, on one hot account and spread over 1,000 accounts, next to `pgbench -b simple-update`
 * at the same client count on the same server, in the same run.
 *
 *   bun bench/billing.ts [seconds per row, default 3]
 *   DATABASE_URL: any database on the server (default postgres://postgres@127.0.0.1:5432/test);
 *   the benchmark creates and drops its own database, and (re)initializes `reelay_pgbench`.
 *
 * Modes (callers = concurrent request loops, each approve → settle → next):
 *  - per-request statements: a hold and a settle statement, both awaited (reelay before the engine)
 *  - engine, exact holds:    the engine with leases off: an awaited hold, settlements batched
 *  - group-committed holds:  concurrent holds collected and written by one statement (the alternative
 *                            to leases; prototype in bench/lib/group-hold.ts), settlements batched
 *  - engine, leases:         approvals from credit leases in memory, settlements batched (the default)
 *  - engine, leases, windows: the same with budgets: every request reserves in its key's daily and
 *                            its account's monthly window too (limits far above the load)
 * The engine's settlements are journaled (a temp dir) and drained before the clock stops. Then the
 * journal's cost per settlement (on vs off) and the statements the database saw per request.
 */
import { $ } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import * as billing from "../src/billing/index.ts";
import { randomId } from "../src/ids.ts";
import { migrate, openDatabase, type Db } from "../src/db/index.ts";
import { createLogger } from "../src/logger.ts";
import { createAccount } from "../src/accounts/accounts.ts";
import { createKey } from "../src/accounts/api-keys.ts";
import { setBudgets } from "../src/billing/budgets.ts";
import { GroupHolds } from "./lib/group-hold.ts";
import { table } from "./lib/wrk.ts";

const seconds = Number(process.argv[2] ?? 3);
const BASE = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const CALLERS = [16, 64];
const WORST = 20_000; // a small chat request's worst case, micro-dollars
const ACTUAL = 7_000;
const ENGINE: billing.BillingConfig = { leases: true, flushMs: 25, leaseTtlMs: 10_000, leaseDemandMs: 1_000, leaseSharePermille: 500, offlineMs: 5_000, reclaimWaitMs: 500, journal: true };
const logger = createLogger({ logLevel: "error", logPretty: false });

const urlFor = (db: string) => Object.assign(new URL(BASE), { pathname: "/" + db }).toString();
const pgArgs = () => {
  const u = new URL(BASE);
  return ["-h", u.hostname, "-p", u.port || "5432", "-U", decodeURIComponent(u.username || "postgres")];
};

async function admin<T>(fn: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = postgres(BASE, { max: 1, onnotice: () => {} });
  try {
    return await fn(sql);
  } finally {
    await sql.end();
  }
}

async function pgbench(clients: number): Promise<number> {
  const out = await $`pgbench ${pgArgs()} -b simple-update -c ${clients} -j ${Math.min(2, clients)} -T ${seconds} -n reelay_pgbench`.quiet().text();
  const m = /tps = ([\d.]+)/.exec(out);
  if (!m) throw new Error(`no tps line in pgbench output:\n${out}`);
  return Number(m[1]);
}

/** Statements the database executed for this database (pg_stat_database.xact_commit). */
async function commits(dbName: string): Promise<number> {
  return admin(async (sql) => Number((await sql<{ n: string }[]>`SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = ${dbName}`)[0]!.n));
}

type Mode = "per-request statements" | "engine, exact holds" | "group-committed holds" | "engine, leases" | "engine, leases, windows";

interface Run {
  /** pairs per second (settlements drained included) */
  pairs: number;
  count: number;
  /** approve latency, ms */
  p50: number;
  p99: number;
  cpuUsPerPair: number;
}

/** each account's key with a daily budget (the account has a monthly one): the windows mode's requests come from it */
const keyOf = new Map<string, string>();

async function run(db: Db, mode: Mode, accounts: string[], callers: number, journalDir: string | null, secs = seconds): Promise<Run> {
  const engine = mode === "per-request statements" ? null : new billing.CreditEngine({
    db, logger, holdTtlMs: 900_000, instanceId: "bench", dataDir: journalDir,
    config: { ...ENGINE, leases: mode.startsWith("engine, leases"), journal: journalDir !== null },
  });
  const windows = mode === "engine, leases, windows";
  const group = mode === "group-committed holds" ? new GroupHolds(db) : null;
  await engine?.start();
  const latencies: number[] = [];
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const until = t0 + secs * 1000;
  let i = 0;
  await Promise.all(Array.from({ length: callers }, async () => {
    while (performance.now() < until) {
      const accountId = accounts[i++ % accounts.length]!;
      const ref = randomId("req");
      const usage = { accountId, ref, kind: "chat" as const, model: "bench", status: 200 };
      const a0 = performance.now();
      if (!engine) {
        const h = await billing.hold(db, { accountId, amount: WORST, ref, reason: "bench", expiresAt: new Date(Date.now() + 900_000) });
        latencies.push(performance.now() - a0);
        await billing.settleOne(db, { holdId: h.id, mode: "settle", actual: ACTUAL, cover: 0, reason: "bench", usage });
      } else {
        const a = group ? await group.approve(accountId, ref, WORST) : await engine.approve({ accountId, ref, amount: WORST, reason: "bench", ...(windows ? { keyId: keyOf.get(accountId)!, model: "bench" } : {}) });
        latencies.push(performance.now() - a0);
        engine.settle(a, { mode: "settle", actual: ACTUAL, reason: "bench", usage: windows ? { ...usage, keyId: keyOf.get(accountId)! } : usage });
        if (latencies.length % 64 === 0) await Bun.sleep(0); // let the flusher's I/O in, as a server's event loop would
      }
    }
  }));
  await engine?.sync(60_000); // every settlement in the database before the clock stops
  const elapsed = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await engine?.stop();
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0;
  return { pairs: latencies.length / elapsed, count: latencies.length, p50: pct(0.5), p99: pct(0.99), cpuUsPerPair: ((cpu.user + cpu.system) / latencies.length) };
}

const benchDb = `reelay_bench_billing_${process.pid}`;
await admin((sql) => sql.unsafe(`CREATE DATABASE ${benchDb}`));
const journalRoot = mkdtempSync(join(tmpdir(), "reelay-bench-journal-"));
try {
  process.stderr.write(`initializing pgbench (scale 10) and ${benchDb}…\n`);
  await admin(async (sql) => {
    await sql.unsafe("DROP DATABASE IF EXISTS reelay_pgbench WITH (FORCE)");
    await sql.unsafe("CREATE DATABASE reelay_pgbench");
  });
  await $`pgbench ${pgArgs()} -i -s 10 -q reelay_pgbench`.quiet();
  const setup = await openDatabase({ databaseUrl: urlFor(benchDb), dataDir: "/nonexistent", poolSize: 8 });
  await migrate(setup.db);
  const many: string[] = [];
  for (let i = 0; i < 1000; i += 50)
    many.push(...(await Promise.all(Array.from({ length: 50 }, async () => {
      const a = await createAccount(setup.db, "bench");
      await billing.grant(setup.db, a.id, 1_000_000_000_000, "bench funding");
      return a.id;
    }))));
  const hot = [many[0]!];
  for (let i = 0; i < many.length; i += 50)
    await Promise.all(many.slice(i, i + 50).map(async (a) => {
      const k = (await createKey(setup.db, a, { name: "bench" })).record.id;
      keyOf.set(a, k);
      await setBudgets(setup.db, { accountId: a, keyId: null }, [{ period: "month", limit: 1_000_000_000_000 }], Date.now());
      await setBudgets(setup.db, { accountId: a, keyId: k }, [{ period: "day", limit: 1_000_000_000_000, timezone: "Europe/Paris" }], Date.now());
    }));
  await setup.close();

  const rows: Array<Array<string | number>> = [];
  for (const wanted of CALLERS) {
    // other clients share the server: never ask for more connections than it has free
    const free = await admin(async (sql) => {
      const [r] = await sql<{ free: number }[]>`SELECT (current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int - (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'))::int - 4 AS free`;
      return r!.free;
    });
    const callers = Math.max(1, Math.min(wanted, free));
    const tps = await pgbench(callers);
    const database = await openDatabase({ databaseUrl: urlFor(benchDb), dataDir: "/nonexistent", poolSize: Math.min(20, callers) });
    for (const mode of ["per-request statements", "engine, exact holds", "group-committed holds", "engine, leases", "engine, leases, windows"] as Mode[]) {
      for (const [name, accounts] of [["1 hot account", hot], ["1,000 accounts", many]] as const) {
        const c0 = await commits(benchDb);
        const r = await run(database.db, mode, accounts, callers, journalRoot);
        const statements = (await commits(benchDb)) - c0;
        rows.push([mode, name, callers < wanted ? `${callers} (of ${wanted})` : callers, Math.round(r.pairs), Math.round(tps), (r.pairs / tps).toFixed(2),
          (r.p50 * 1000).toFixed(0), (r.p99 * 1000).toFixed(0), (statements / r.count).toFixed(3), r.cpuUsPerPair.toFixed(0)]);
        process.stderr.write(`  ${rows.at(-1)!.join("  ")}\n`);
      }
    }
    await database.close();
  }
  console.log(`\napprove + settle pairs/s vs pgbench simple-update tps (${seconds} s per row, ${new URL(BASE).host}; settlements drained before the clock stops)\n`);
  console.log(table(["mode", "accounts", "callers", "pairs/s", "pgbench tps", "÷ pgbench", "approve p50 µs", "approve p99 µs", "commits / request", "bench CPU µs / pair"], rows));

  // the journal's price: one write() per settlement, measured as CPU per pair with and without it
  const database = await openDatabase({ databaseUrl: urlFor(benchDb), dataDir: "/nonexistent", poolSize: 16 });
  const journalRows: Array<Array<string | number>> = [];
  const runs: Record<string, number[]> = { on: [], off: [] };
  for (let k = 0; k < 3; k++) {
    for (const j of ["off", "on"] as const) runs[j]!.push((await run(database.db, "engine, leases", many, 16, j === "on" ? journalRoot : null, Math.max(1, seconds / 2))).cpuUsPerPair);
  }
  await database.close();
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  journalRows.push(["engine, leases, 1,000 accounts, 16 callers", median(runs.off!).toFixed(1), median(runs.on!).toFixed(1), (median(runs.on!) - median(runs.off!)).toFixed(1)]);
  console.log(`\nsettlement journal cost (median of 3 runs each)\n`);
  console.log(table(["run", "CPU µs / pair, journal off", "journal on", "journal cost µs"], journalRows));
} finally {
  rmSync(journalRoot, { recursive: true, force: true });
  await admin((sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${benchDb} WITH (FORCE)`));
}
