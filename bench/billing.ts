/**
 * Billing throughput: hold + settle pairs per second against a real Postgres, on one hot account
 * and spread over 1,000 accounts, at 1/16/64 concurrent callers (one pool connection per caller),
 * printed next to `pgbench -b simple-update` at the same client count on the same server, in the
 * same run. Then the latency of one hold + settle at 32 concurrent callers (what a chat request
 * pays for billing).
 *
 *   bun bench/billing.ts [seconds per row, default 5]
 *   DATABASE_URL: any database on the server (default postgres://postgres@127.0.0.1:5432/test);
 *   the benchmark creates and drops its own database, and (re)initializes `reelay_pgbench`.
 *
 * pgbench's simple-update transaction is BEGIN; UPDATE; SELECT; INSERT; END (5 round trips, one
 * commit); a hold + settle is 2 autocommitted statements (2 round trips, 2 commits).
 */
import { $ } from "bun";
import postgres from "postgres";
import * as billing from "../src/billing/index.ts";
import { migrate, openDatabase, type Db } from "../src/db/index.ts";
import { createAccount } from "../src/modules/accounts/service.ts";

const seconds = Number(process.argv[2] ?? 5);
const BASE = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const CALLERS = [1, 16, 64];
const LATENCY_CALLERS = 32;
const HOLD = 20_000; // a small chat request's worst case, micro-dollars

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

async function pgbenchInit() {
  await admin(async (sql) => {
    await sql.unsafe("DROP DATABASE IF EXISTS reelay_pgbench WITH (FORCE)");
    await sql.unsafe("CREATE DATABASE reelay_pgbench");
  });
  await $`pgbench ${pgArgs()} -i -s 10 -q reelay_pgbench`.quiet();
}

async function pgbench(clients: number): Promise<number> {
  const out = await $`pgbench ${pgArgs()} -b simple-update -c ${clients} -j ${Math.min(2, clients)} -T ${seconds} -n reelay_pgbench`.quiet().text();
  const m = /tps = ([\d.]+)/.exec(out);
  if (!m) throw new Error(`no tps line in pgbench output:\n${out}`);
  return Number(m[1]);
}

/** `callers` loops of hold + settle for `seconds`; returns pairs/s and per-pair latencies (ms). */
async function run(db: Db, accounts: string[], callers: number) {
  const latencies: number[] = [];
  const until = performance.now() + seconds * 1000;
  let i = 0;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (performance.now() < until) {
        const accountId = accounts[i++ % accounts.length]!;
        const t0 = performance.now();
        const ref = billing.randomId("req");
        const h = await billing.hold(db, { accountId, amount: HOLD, ref, reason: "bench", expiresAt: new Date(Date.now() + 900_000) });
        await billing.settleOne(db, { holdId: h.id, mode: "settle", actual: HOLD / 2, cover: 0, reason: "bench", usage: { accountId, ref, kind: "chat", model: "bench", status: 200 } });
        latencies.push(performance.now() - t0);
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]!;
  return { pairs: latencies.length / seconds, p50: pct(0.5), p99: pct(0.99) };
}

const benchDb = `reelay_bench_billing_${process.pid}`;
await admin((sql) => sql.unsafe(`CREATE DATABASE ${benchDb}`));
try {
  process.stderr.write(`initializing pgbench (scale 10) and ${benchDb}…\n`);
  await pgbenchInit();
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
  await setup.close();

  const rows: string[][] = [];
  const pgbenchTps = new Map<number, number>();
  for (const wanted of CALLERS) {
    // other clients share the server: never ask for more connections than it has free
    const free = await admin(async (sql) => {
      const [r] = await sql<{ free: number }[]>`SELECT (current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int - (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'))::int - 4 AS free`;
      return r!.free;
    });
    const callers = Math.max(1, Math.min(wanted, free));
    if (callers < wanted) process.stderr.write(`  only ${free} free connections on the server: ${wanted} callers capped to ${callers}\n`);
    pgbenchTps.set(callers, await pgbench(callers));
    const database = await openDatabase({ databaseUrl: urlFor(benchDb), dataDir: "/nonexistent", poolSize: Math.min(64, callers) });
    for (const [name, accounts] of [["1 hot account", hot], ["1,000 accounts", many]] as const) {
      const r = await run(database.db, accounts, callers);
      const tps = pgbenchTps.get(callers)!;
      rows.push([name, callers < wanted ? `${callers} (of ${wanted})` : String(callers), r.pairs.toFixed(0), tps.toFixed(0), (r.pairs / tps).toFixed(2), r.p50.toFixed(2), r.p99.toFixed(2)]);
      process.stderr.write(`  ${rows.at(-1)!.join("  ")}\n`);
    }
    await database.close();
  }

  const latency: string[][] = [];
  const database = await openDatabase({ databaseUrl: urlFor(benchDb), dataDir: "/nonexistent", poolSize: LATENCY_CALLERS });
  for (const [name, accounts] of [["1 hot account", hot], ["1,000 accounts", many]] as const) {
    const r = await run(database.db, accounts, LATENCY_CALLERS);
    latency.push([name, String(LATENCY_CALLERS), r.pairs.toFixed(0), r.p50.toFixed(2), r.p99.toFixed(2)]);
  }
  await database.close();

  const table = (head: string[], body: string[][]) => {
    const w = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
    const line = (r: string[]) => "| " + r.map((c, i) => (i < 1 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join(" | ") + " |";
    return [line(head), "|" + w.map((n, i) => "-" + "-".repeat(n) + (i < 1 ? "-" : ":") + "|").join(""), ...body.map(line)].join("\n");
  };
  console.log(`\nhold + settle pairs/s vs pgbench simple-update tps (${seconds} s per row, ${new URL(BASE).host})\n`);
  console.log(table(["accounts", "callers", "pairs/s", "pgbench tps", "ratio", "p50 ms", "p99 ms"], rows));
  console.log(`\nlatency of one hold + settle at ${LATENCY_CALLERS} concurrent callers\n`);
  console.log(table(["accounts", "callers", "pairs/s", "p50 ms", "p99 ms"], latency));
} finally {
  await admin((sql) => sql.unsafe(`DROP DATABASE IF EXISTS ${benchDb} WITH (FORCE)`));
}
