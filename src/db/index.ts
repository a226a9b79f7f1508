/**
 * The database: PostgreSQL through postgres.js when DATABASE_URL is set, otherwise PGlite
 * (Postgres compiled to WASM) under the data directory. Same schema, same migrations, same queries.
 */
import { PGlite } from "@electric-sql/pglite";
import { sql, type SQL } from "drizzle-orm";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import * as schema from "./schema/index.ts";
import { pgliteAssets } from "./embedded-assets.ts";
import { MIGRATIONS, splitStatements } from "./migrations.ts";
import { hasSqlState } from "./unavailable.ts";
import { embeddedSeed, unpackSeed } from "./pglite-seed.ts";

export type Db = ReturnType<typeof drizzlePostgres<typeof schema>>;
/** a Db or a transaction on it: every query function takes one of these first */
export type Tx = Db | Parameters<Parameters<Db["transaction"]>[0]>[0];

export interface Database {
  db: Db;
  kind: "postgres" | "pglite";
  /** a fresh PGlite data dir unpacked from the seed shipped in the binary (pglite-seed.ts) */
  seeded?: boolean;
  /** PGlite: a consistent copy of the data directory as a gzipped tarball (queries wait for it; `reelay backup`) */
  dump?(): Promise<Blob>;
  close(): Promise<void>;
}

/**
 * postgres.js settings for a database that goes away (measured by test/edge/postgres-outage.test.ts):
 * - connect_timeout 2 s (default 30 s): a refused connection fails at once anyway; this bounds an
 *   unreachable host or a server that accepts but never answers the startup (seen while it shuts
 *   down), so a request waits at most 2 s before its 503.
 * - backoff: postgres.js waits before reconnecting after each failed connection, by default
 *   min(3^n / 100, 20) s — after a 5 s outage that was ~20 s, and every query queued behind it
 *   (first success 6.3 s after the database was back, requests still waiting 28 s later). Here:
 *   50 ms doubling up to 250 ms, so queries fail fast while it is down and the pool reconnects
 *   within ~0.25 s of its return.
 */
const OUTAGE_OPTIONS = {
  connect_timeout: 2,
  backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 0.25),
};

/**
 * How long closing the pool waits for queries still out, in seconds. The database is closed last,
 * after requests drained and settlements were written: what is still out then is a straggler of a
 * request the grace period cut, or nothing that can finish — postgres.js keeps a transaction's
 * `begin` that was sent on a connection lost in a database restart (socket gone, query never
 * answered), and with the former 5 s every graceful stop after a restart took 5 s
 * (test/edge/postgres-outage.test.ts).
 */
const CLOSE_TIMEOUT_S = 0.5;

/**
 * Every execution of a prepared statement is planned for the data as it is now
 * (`plan_cache_mode = force_custom_plan`; the parse stays cached). With PostgreSQL's default, from
 * the sixth execution on a connection may keep one generic plan for its whole life, chosen for the
 * tables as they were then: on a young database, empty. The settlement batch's check for usage rows
 * already written (settle-batch.ts) then stayed a hash anti-join over a sequential scan of
 * usage_records, one row per request ever served, on every batch: with 100,000 rows 110 ms
 * instead of 0.07 ms through usage_ref_uniq. That was the soak's latency creeping with uptime
 * (bench/soak.ts: chat p99 24 -> 35 ms and GET /v1/usage, which waits for a batch, 10 -> 31 ms over
 * 20 minutes) and why a fresh process, planning anew, was fast again. Only an ANALYZE (autovacuum)
 * replaces such a plan, and autovacuum may be off or far behind. The price is a plan per execution
 * (docs/billing-engine.md "Plans and row churn": a few ms for the batch statement, once per batch).
 */
const PLAN_CACHE_MODE = "force_custom_plan";

export async function openDatabase(opts: { databaseUrl: string | null; dataDir: string; poolSize?: number; seed?: Blob | null }): Promise<Database> {
  if (opts.databaseUrl) {
    const client = postgres(opts.databaseUrl, { max: opts.poolSize ?? 20, onnotice: () => {}, connection: { application_name: "reelay", plan_cache_mode: PLAN_CACHE_MODE }, ...OUTAGE_OPTIONS });
    const db = drizzlePostgres(client, { schema });
    return { db, kind: "postgres", close: () => client.end({ timeout: CLOSE_TIMEOUT_S }) };
  }
  mkdirSync(opts.dataDir, { recursive: true });
  const fresh = !existsSync(join(opts.dataDir, "PG_VERSION"));
  const seed = fresh ? (opts.seed === undefined ? embeddedSeed() : opts.seed) : null;
  const compile = (path: string) => (compiledWasm[path] ??= Bun.file(path).arrayBuffer().then((b) => WebAssembly.compile(b)));
  const [pgliteWasmModule, initdbWasmModule] = await Promise.all([
    compile(pgliteAssets.pgliteWasm),
    // initdb runs only for a fresh data dir without the embedded seed (under `bun run`)
    fresh && !seed ? compile(pgliteAssets.initdbWasm) : undefined,
    seed ? unpackSeed(seed, opts.dataDir) : undefined,
  ]);
  const fsBundle = Bun.file(pgliteAssets.pgliteData);
  const client = await PGlite.create({
    dataDir: opts.dataDir,
    pgliteWasmModule,
    initdbWasmModule,
    fsBundle,
    startParams: [...PGlite.defaultStartParams, ...PGLITE_SETTINGS],
  });
  const db = drizzlePglite(client, { schema }) as unknown as Db;
  // dumpDataDir runs between queries (PGlite serves one at a time) after a checkpoint: a consistent copy
  return { db, kind: "pglite", seeded: Boolean(seed), dump: () => client.dumpDataDir("gzip"), close: () => client.close() };
}

/** PGlite's WASM compiled once per process (a CLI command or a test that opens several data dirs pays it once) */
const compiledWasm: Record<string, Promise<WebAssembly.Module>> = {};

/**
 * Postgres' default shared_buffers (128 MB) lives in PGlite's WASM heap and is touched at start:
 * idle RSS 272 MB with it, 143 MB with 16 MB (measured, PGlite 0.5, existing data dir). 16 MB is
 * 2,048 pages, far above the embedded default's working set (keys, accounts, holds, recent jobs);
 * a database that outgrows it belongs on PostgreSQL (DATABASE_URL).
 */
const PGLITE_SETTINGS = ["-c", "shared_buffers=16MB"];

/** Rows of a raw `execute` (postgres.js returns an array, PGlite an object with `rows`). */
export function rowsOf<T>(result: unknown): T[] {
  return (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[];
}

/**
 * Run a raw statement. On Postgres it goes through postgres.js as a named prepared statement:
 * drizzle's `execute` sends unprepared queries, and the billing CTEs then cost a parse and a plan
 * every time (a hold measured 1.7–2.6 ms unprepared vs 0.7–0.8 ms prepared, p50 on this machine).
 * The statement texts are fixed (values are parameters), so each connection caches a handful.
 */
export async function query<T = Record<string, unknown>>(db: Tx, q: SQL): Promise<T[]> {
  const { session, dialect } = db as unknown as { session?: { client?: { unsafe?: Function } }; dialect: { sqlToQuery(q: SQL): { sql: string; params: unknown[] } } };
  const client = session?.client;
  if (typeof client?.unsafe === "function") {
    const { sql: text, params } = dialect.sqlToQuery(q);
    return (await client.unsafe(text, params, { prepare: true })) as T[];
  }
  return rowsOf<T>(await db.execute(q));
}

const MIGRATION_LOCK = 7_312_001; // arbitrary advisory-lock key shared by all reelay instances

/**
 * A migration's DDL and the queries of instances still serving (a rolling upgrade: the previous
 * release on the same database) can lock the same tables in opposite orders; PostgreSQL then ends
 * one of them with 40P01. Seen in the rolling-upgrade test (an old instance's lease refill against
 * `ALTER TABLE accounts`); when the victim is the migration, its transaction rolled back whole, so
 * it is tried again — up to this many times in all — instead of stopping the new instance's boot.
 */
const MIGRATION_ATTEMPTS = 5;

/** Apply pending migrations in one transaction under an advisory lock (several instances may boot at once); a deadlock is tried again. */
export async function migrate(db: Db, migrations = MIGRATIONS, onDeadlock?: (err: unknown, attempt: number) => void): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await migrateOnce(db, migrations);
    } catch (e) {
      if (attempt >= MIGRATION_ATTEMPTS || !hasSqlState(e, "40P01")) throw e;
      onDeadlock?.(e, attempt);
      await Bun.sleep(100 * attempt);
    }
  }
}

async function migrateOnce(db: Db, migrations: typeof MIGRATIONS): Promise<string[]> {
  const applied: string[] = [];
  await db.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`);
    await tx.execute(sql`CREATE TABLE IF NOT EXISTS reelay_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await query<{ name: string }>(tx, sql`SELECT name FROM reelay_migrations`)).map((r) => r.name));
    for (const m of migrations) {
      if (done.has(m.name)) continue;
      for (const stmt of splitStatements(m.sql)) await tx.execute(sql.raw(stmt));
      await tx.execute(sql`INSERT INTO reelay_migrations (name) VALUES (${m.name})`);
      applied.push(m.name);
    }
  });
  return applied;
}

/** Names of migrations the binary knows but the database lacks (readiness check). */
export async function pendingMigrations(db: Db): Promise<string[]> {
  const rows = await query<{ name: string }>(db, sql`SELECT name FROM reelay_migrations`).catch(() => []);
  const done = new Set(rows.map((r) => r.name));
  return MIGRATIONS.map((m) => m.name).filter((n) => !done.has(n));
}
