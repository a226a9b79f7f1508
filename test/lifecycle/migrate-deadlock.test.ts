/**
 * A migration deadlocked with the queries of an instance still serving (a rolling upgrade: the
 * previous release's lease refill locks a hold then its account while `ALTER TABLE accounts …;
 * ALTER TABLE holds …` locks the tables the other way round; seen in the rolling-upgrade test's
 * Postgres log). When PostgreSQL picks the migration as the victim, it is tried again and lands;
 * the other session goes on. Real Postgres: a real deadlock, the migration made the victim by
 * giving the other session a longer deadlock_timeout.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import postgres from "postgres";
import { migrate, openDatabase, type Database } from "../../src/db/index.ts";
import { createTestDatabase, dropDatabase } from "../support/harness.ts";

let url: string;
let database: Database;
let other: postgres.Sql;

beforeAll(async () => {
  url = await createTestDatabase();
  database = await openDatabase({ databaseUrl: url, dataDir: "/nonexistent", poolSize: 2 });
  other = postgres(url, { max: 1, onnotice: () => {} });
  await other.unsafe(`CREATE TABLE accts (id int PRIMARY KEY, held int NOT NULL); CREATE TABLE hlds (id int PRIMARY KEY, amount int NOT NULL);
    INSERT INTO accts VALUES (1, 0); INSERT INTO hlds VALUES (1, 0);`);
});

afterAll(async () => {
  await other?.end();
  await database?.close();
  if (url) await dropDatabase(url);
});

test("a migration that PostgreSQL ends with deadlock_detected is tried again and lands; the other session's transaction commits", async () => {
  const retries: Array<{ code: string | undefined; attempt: number }> = [];
  const migrations = [{ name: "9999_test_expand", sql: "ALTER TABLE accts ADD COLUMN version int DEFAULT 0 NOT NULL;--> statement-breakpoint\nALTER TABLE hlds ADD COLUMN windows text[];" }];
  const codeOf = (e: unknown): string | undefined => (e as { code?: string } | null)?.code ?? (e ? codeOf((e as { cause?: unknown }).cause) : undefined);

  let migrating: Promise<string[]> | undefined;
  await other.begin(async (tx) => {
    // this session waits 10 s before it looks for a deadlock; the migration's 1 s default finds it first and is the victim
    await tx.unsafe("SET LOCAL deadlock_timeout = '10s'");
    await tx.unsafe("UPDATE hlds SET amount = amount + 1 WHERE id = 1"); // the old instance's hold row
    migrating = migrate(database.db, migrations, (err, attempt) => void retries.push({ code: codeOf(err), attempt }));
    // the migration holds accts (ALTER TABLE took it) and waits for hlds, which this transaction holds
    const waiting = () => tx.unsafe(`SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'hlds' AND l.mode = 'AccessExclusiveLock' AND NOT l.granted`);
    for (const until = performance.now() + 30_000; performance.now() < until && (await waiting())[0]!.n === 0; ) await Bun.sleep(20);
    expect((await waiting())[0]!.n).toBe(1);
    await tx.unsafe("UPDATE accts SET held = held + 1 WHERE id = 1"); // then its account row: the cycle
  });
  expect(await migrating).toEqual(["9999_test_expand"]);
  expect(retries).toEqual([{ code: "40P01", attempt: 1 }]);
  // both sides' work is there: the other session's updates and the migration's columns
  expect([...(await other`SELECT a.held, a.version, h.amount, h.windows FROM accts a, hlds h`)]).toEqual([{ held: 1, version: 0, amount: 1, windows: null }]);
  expect((await other`SELECT name FROM reelay_migrations`).map((r) => r.name)).toEqual(["9999_test_expand"]);
}, 60_000);
