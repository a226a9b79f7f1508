/** The mixed load (mixed-load.case.ts) on two server processes sharing one Postgres. */
import { afterAll, beforeAll, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type Database } from "../../src/db/index.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { spawnServer, type ChildServer } from "../support/child-server.ts";
import { createTestDatabase, dropDatabase } from "../support/harness.ts";
import { runMixedLoad } from "./mixed-load.case.ts";
import { budgetModels } from "./support.ts";

let fake: FakeOpenAI;
let url: string;
let db: Database;
let dir: string;
let servers: ChildServer[] = [];
const data = mkdtempSync(join(tmpdir(), "reelay-mixed-"));

beforeAll(async () => {
  fake = await startFakeOpenAI({ tokens: 8 });
  const m = budgetModels(fake.url);
  dir = m.dir;
  url = await createTestDatabase();
  const env = (i: number) => ({ ...m.env, DATABASE_URL: url, REELAY_DATA_DIR: join(data, `d${i}`), REELAY_HOLD_SWEEP_MS: "500", REELAY_RATE_VIDEO_CONCURRENCY: "0", REELAY_RATE_TPM: "0", REELAY_SCHEDULER_POLL_MS: "50" });
  servers = [await spawnServer(env(0)), await spawnServer(env(1))];
  db = await openDatabase({ databaseUrl: url, dataDir: "/nonexistent", poolSize: 2 });
}, 120_000);
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  await db?.close();
  await fake?.stop();
  if (url) await dropDatabase(url);
  rmSync(dir, { recursive: true, force: true });
  rmSync(data, { recursive: true, force: true });
}, 60_000);

test("1,000 concurrent mixed requests on two instances (Postgres): no pot overspends at any moment, every refusal is exact, what is left at the end is less than one request's worst case", async () => {
  await runMixedLoad(servers, db.db, { jobsTimeoutMs: 90_000, requests: 1_000 });
}, 300_000);
