/**
 * Upgrades from every earlier schema: for each migration set 0..n of src/db/migrations.ts (n below
 * the last), a database built by it and filled as a server of that schema would have (fixtures.ts),
 * then the current server boots on it (migrating at boot) and everything reads back the same through
 * the API, with the billing invariants holding and no expired hold left open after the sweep. On
 * PostgreSQL and on a PGlite data directory. A migration added later is covered without a change here.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "../../src/boot.ts";
import { openDatabase } from "../../src/db/index.ts";
import { MIGRATIONS } from "../../src/db/migrations.ts";
import { createTestDatabase, dropDatabase, testConfig } from "../support/harness.ts";
import { buildFixture, FIXTURE_SECRET_KEY } from "./fixtures.ts";
import { expectFixtureReadsBack } from "./readback.ts";

const EARLIER = MIGRATIONS.slice(0, -1).map((m, n) => ({ n, name: m.name }));
/**
 * PGlite runs the same migrations and queries as PostgreSQL, and each of its data directories costs
 * an initdb-free copy plus two WASM boots (3–5 s idle, 15–40 s on a loaded 2-core machine): it
 * upgrades from the first schema, the previous release's (0005, commit 222e0b0) and the newest
 * earlier one; PostgreSQL from every one.
 */
const PGLITE_FROM = EARLIER.filter(({ n, name }) => n === 0 || name === "0005_responses_and_usage_route" || n === EARLIER.length - 1);
const SERVER_ENV = { REELAY_SECRET_KEY: FIXTURE_SECRET_KEY, REELAY_HOLD_SWEEP_MS: "100", REELAY_SCHEDULER_POLL_MS: "60000", REELAY_WEBHOOK_POLL_MS: "60000", REELAY_MODELS_FILE: undefined };

async function upgradeAndCheck(config: ReturnType<typeof testConfig>, fx: Awaited<ReturnType<typeof buildFixture>>) {
  const running = await startServer(config);
  try {
    const ready = await fetch(running.url! + "/readyz");
    expect(ready.status).toBe(200);
    await expectFixtureReadsBack(running.url!, running.deps.database.db, fx);
  } finally {
    await running.stop();
  }
}

describe("upgrade from every earlier schema: PostgreSQL", () => {
  const urls: string[] = [];
  afterAll(async () => {
    for (const u of urls) await dropDatabase(u);
  });
  for (const { n, name } of EARLIER) {
    test(`up to ${name}`, async () => {
      const url = await createTestDatabase();
      urls.push(url);
      const old = await openDatabase({ databaseUrl: url, dataDir: "/nonexistent", poolSize: 2 });
      const fx = await buildFixture(old.db, n, `p${n}_`);
      await old.close();
      await upgradeAndCheck(testConfig({ DATABASE_URL: url, ...SERVER_ENV }), fx);
    });
  }
});

describe("upgrade from every earlier schema: PGlite data directory", () => {
  const root = mkdtempSync(join(tmpdir(), "reelay-upgrade-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  // initdb once (no seed: the seed has every migration); each schema starts from a copy of it
  const template = join(root, "template");
  let initialised: Promise<void> | null = null;
  const initdb = () =>
    (initialised ??= openDatabase({ databaseUrl: null, dataDir: template, seed: null }).then((d) => d.close()));
  for (const { n, name } of PGLITE_FROM) {
    test(`up to ${name}`, async () => {
      await initdb();
      const dir = join(root, `schema-${n}`);
      cpSync(template, dir, { recursive: true });
      const old = await openDatabase({ databaseUrl: null, dataDir: dir, seed: null });
      const fx = await buildFixture(old.db, n, `g${n}_`);
      await old.close();
      await upgradeAndCheck(testConfig({ REELAY_DATA_DIR: dir, ...SERVER_ENV }), fx);
      rmSync(dir, { recursive: true, force: true });
    }, 180_000);
  }
});
