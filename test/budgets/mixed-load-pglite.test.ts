/** The mixed load (mixed-load.case.ts) on the embedded database: one in-process server on PGlite. */
import { afterAll, beforeAll, test } from "bun:test";
import { rmSync } from "node:fs";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { runMixedLoad } from "./mixed-load.case.ts";
import { budgetModels, startBudgetServer, type BudgetServer } from "./support.ts";

let fake: FakeOpenAI;
let server: BudgetServer;
let dir: string;

beforeAll(async () => {
  fake = await startFakeOpenAI({ tokens: 8 });
  const m = budgetModels(fake.url);
  dir = m.dir;
  server = await startBudgetServer({ ...m.env, REELAY_SCHEDULER_POLL_MS: "50" }, { pglite: true });
}, 120_000);
afterAll(async () => {
  await server?.close();
  await fake?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("300 concurrent mixed requests on PGlite (one connection): no pot overspends at any moment, every refusal is exact, what is left at the end is less than one request's worst case", async () => {
  await runMixedLoad([server], server.deps.database.db, { jobsTimeoutMs: 180_000, requests: 300 });
}, 400_000);
