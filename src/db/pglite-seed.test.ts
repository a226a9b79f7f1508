/**
 * The shipped PGlite seed: a fresh data dir unpacked from it is a working, migrated database, and
 * migrations newer than the seed (added after it was built) still apply on top.
 */
import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { drizzle } from "drizzle-orm/pglite";
import { sql } from "drizzle-orm";
import { migrate, openDatabase, pendingMigrations, query, type Db } from "./index.ts";
import { MIGRATIONS } from "./migrations.ts";
import { buildSeed } from "./pglite-seed.ts";
import * as schema from "./schema/index.ts";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

test("a data dir unpacked from a seed older than the binary's migrations gets the newer ones on top", async () => {
  // a seed built when only the first migration existed
  const { tarball, migrations } = await buildSeed((client) => migrate(drizzle(client, { schema }) as unknown as Db, MIGRATIONS.slice(0, 1)));
  expect(migrations).toEqual([MIGRATIONS[0]!.name]);
  expect(tarball.size).toBeGreaterThan(100_000);

  const dataDir = mkdtempSync(join(tmpdir(), "reelay-seed-"));
  dirs.push(dataDir);
  const database = await openDatabase({ databaseUrl: null, dataDir, seed: tarball });
  try {
    expect(database.seeded).toBe(true);
    expect(existsSync(join(dataDir, "PG_VERSION"))).toBe(true);
    expect(await pendingMigrations(database.db)).toEqual(MIGRATIONS.slice(1).map((m) => m.name));
    expect(await migrate(database.db)).toEqual(MIGRATIONS.slice(1).map((m) => m.name));
    expect(await pendingMigrations(database.db)).toEqual([]);
    await database.db.execute(sql`INSERT INTO accounts (id, name) VALUES ('acct_seedtest', 'seed')`);
  } finally {
    await database.close();
  }
  // reopened: the same data, no seed involved
  const again = await openDatabase({ databaseUrl: null, dataDir, seed: tarball });
  try {
    expect(again.seeded).toBe(false);
    expect(await query<{ name: string }>(again.db, sql`SELECT name FROM accounts WHERE id = 'acct_seedtest'`)).toEqual([{ name: "seed" }]);
  } finally {
    await again.close();
  }
}, 120_000);
