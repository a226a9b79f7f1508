/**
 * A statement run outside a transaction never runs inside one (postgres.js 3.4.9, patched by
 * patches/postgres+3.4.9.patch).
 *
 * When every pooled connection is busy, postgres.js pipelines a new query onto a busy connection.
 * Unpatched, a connection that had just been sent a transaction's BEGIN went back among the busy
 * ones until the BEGIN's answer came, so statements of other requests were pipelined behind it and
 * ran inside that transaction: they took its locks for its whole length (a video submit's
 * transaction then deadlocked with holds of other requests, answered 500, under 1,000 mixed
 * requests on two instances) and were undone by its ROLLBACK although their callers had been told
 * they succeeded. Its socket's `drain` event could also hand a connection back to the pool in the
 * middle of a transaction (porsager/postgres#823, #1189).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { openDatabase, query, type Database } from "../../src/db/index.ts";
import { createTestDatabase, dropDatabase } from "../support/harness.ts";

let url: string;
let database: Database;
beforeAll(async () => {
  url = await createTestDatabase();
  database = await openDatabase({ databaseUrl: url, dataDir: "/nonexistent", poolSize: 2 });
  await query(database.db, sql`CREATE TABLE marks (n int PRIMARY KEY)`);
});
afterAll(async () => {
  await database?.close();
  if (url) await dropDatabase(url);
});

test("a transaction started while every connection's pipeline is full runs alone on its connection: statements of others are neither inside it nor undone by its rollback", async () => {
  const db = database.db;
  // The pool pipelines up to 100 statements on a busy connection; the BEGIN is sent after n others
  // spread over the two busy connections, so that for some n it is the 100th on its connection.
  for (const n of [196, 197, 198, 199, 200]) {
    await query(db, sql`DELETE FROM marks`);
    // both connections open (a pool connects lazily), then both busy
    await Promise.all([query(db, sql`SELECT pg_sleep(0.02)`), query(db, sql`SELECT pg_sleep(0.02)`)]);
    const sleeps = [query(db, sql`SELECT pg_sleep(0.2)`), query(db, sql`SELECT pg_sleep(0.2)`)];
    await Bun.sleep(5); // each step is sent before the next begins (a transaction's BEGIN is sent at once, a query a tick later)
    const before = Array.from({ length: n }, (_, i) => query(db, sql`INSERT INTO marks VALUES (${i})`));
    await Bun.sleep(5);
    const rolledBack = db
      .transaction(async (tx) => {
        await query(tx, sql`INSERT INTO marks VALUES (-1)`);
        throw new Error("roll back");
      })
      .then(() => "committed", (e: Error) => e.message);
    await Bun.sleep(5);
    const after = Array.from({ length: 20 }, (_, i) => query(db, sql`INSERT INTO marks VALUES (${1000 + i})`));
    await Promise.all([...sleeps, ...before, ...after]);
    expect({ n, outcome: await rolledBack }).toEqual({ n, outcome: "roll back" });
    const rows = await query<{ n: number }>(db, sql`SELECT n FROM marks ORDER BY n`);
    expect({ n, marks: rows.map((r) => r.n) }).toEqual({ n, marks: [...Array.from({ length: n }, (_, i) => i), ...Array.from({ length: 20 }, (_, i) => 1000 + i)] });
    // no connection was left inside a transaction
    const open = await query<{ n: number }>(db, sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`);
    expect({ n, idleInTransaction: open[0]!.n }).toEqual({ n, idleInTransaction: 0 });
  }
});

test("many transactions and statements racing on a small pool: every committed write is there, every rolled back one is not", async () => {
  const db = database.db;
  await query(db, sql`DELETE FROM marks`);
  const ops: Array<Promise<unknown>> = [];
  const want: number[] = [];
  for (let i = 0; i < 300; i++) {
    if (i % 3 === 0) {
      const commit = i % 2 === 0;
      if (commit) want.push(i);
      ops.push(db.transaction(async (tx) => {
        await query(tx, sql`INSERT INTO marks VALUES (${i})`);
        await query(tx, sql`SELECT pg_sleep(0.002)`);
        if (!commit) throw new Error("roll back");
      }).catch((e: Error) => {
        if (e.message !== "roll back") throw e;
      }));
    } else {
      want.push(i);
      ops.push(query(db, sql`INSERT INTO marks VALUES (${i})`));
    }
  }
  await Promise.all(ops);
  const rows = await query<{ n: number }>(db, sql`SELECT n FROM marks ORDER BY n`);
  expect(rows.map((r) => r.n)).toEqual(want.sort((a, b) => a - b));
});
