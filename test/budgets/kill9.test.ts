/**
 * kill -9 mid-load never overspends a budget. An instance serving a key from a lease that reserves
 * in the key's daily window is killed while 8 request loops run; the other instance keeps serving
 * the key until the window refuses. Checked at every sample and at the end: the window's spent +
 * held never passes its limit — the dead instance's reservation stays counted until its lease
 * expires and is swept, then goes back to the window. The killed instance then restarts on its data
 * directory and replays its journal: the answered requests it had not yet written are charged now,
 * from what the window has left (never past its limit; what does not fit is recorded as a
 * shortfall), and the ledger and the window add up.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { openDatabase, query, type Database } from "../../src/db/index.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { newClientOn, spawnServer, type ChildServer } from "../support/child-server.ts";
import { createTestDatabase, dropDatabase } from "../support/harness.ts";
import { expectInvariants, expectWindowInvariants, windowRows } from "../billing/support.ts";
import { budgetModels, CHAT_COST, routes } from "./support.ts";

let fake: FakeOpenAI;
let url: string;
let db: Database;
let dir: string;
const data = mkdtempSync(join(tmpdir(), "reelay-budget-kill9-"));
const running: ChildServer[] = [];
let env: Record<string, string>;

beforeAll(async () => {
  fake = await startFakeOpenAI({ tokens: 8 });
  const m = budgetModels(fake.url);
  dir = m.dir;
  url = await createTestDatabase();
  env = { ...m.env, DATABASE_URL: url, REELAY_HOLD_SWEEP_MS: "300" };
  db = await openDatabase({ databaseUrl: url, dataDir: "/nonexistent", poolSize: 2 });
}, 60_000);
afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
  await db?.close();
  await fake?.stop();
  if (url) await dropDatabase(url);
  rmSync(dir, { recursive: true, force: true });
  rmSync(data, { recursive: true, force: true });
}, 60_000);

async function server(name: string, extra: Record<string, string> = {}) {
  const s = await spawnServer({ ...env, REELAY_DATA_DIR: join(data, name), ...extra });
  running.push(s);
  return s;
}

test("kill -9 mid-load: a key's window never passes its limit — not while the dead lease is out, not after it is swept, not after the journal is replayed", async () => {
  const b1 = await server("b1", { REELAY_LEASE_TTL_MS: "2000", REELAY_HOLD_TTL_SECONDS: "2" });
  const b2 = await server("b2");
  const LIMIT = 3_000 * CHAT_COST + 77;
  const c = await newClientOn(b1, 100_000_000);
  expect((await b1.admin(`/admin/keys/${c.keyId}/budgets`, { method: "PUT", body: { budgets: [{ period: "day", limit: LIMIT }] } })).status).toBe(200);

  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      for (const w of await windowRows(db.db, [c.accountId])) expect({ within: w.spent + w.held <= w.limit, w }).toMatchObject({ within: true });
      await Bun.sleep(25);
    }
  })();

  const answered: string[] = [];
  const loops = Array.from({ length: 8 }, async () => {
    for (;;) {
      try {
        const res = await routes.chat(b1.url, c.key);
        await res.arrayBuffer();
        if (res.status === 200) answered.push(res.headers.get("x-request-id")!);
        else if (res.status === 402) return;
      } catch {
        return; // the process is gone
      }
    }
  });
  const t0 = performance.now();
  while (answered.length < 60) {
    if (performance.now() - t0 > 60_000) throw new Error("no traffic");
    await Bun.sleep(20);
  }
  await Bun.sleep(300 + Math.random() * 300);
  await b1.kill9();
  await Promise.all(loops);
  const leased = await query<{ n: number }>(db.db, sql`SELECT count(*)::int AS n FROM holds WHERE account_id = ${c.accountId} AND kind = 'lease' AND state = 'open'`);
  expect(leased[0]!.n).toBeGreaterThanOrEqual(1); // the dead instance's lease still reserves in the window

  // the other instance fills the window: its requests are refused only once nothing is left for them
  let refused: any = null;
  for (let i = 0; i < 5_000 && !refused; i++) {
    const res = await routes.chat(b2.url, c.key);
    const body = (await res.json()) as any;
    if (res.status === 402 && !/retry shortly/.test(body.error.message)) refused = body.error;
    else if (res.status === 402) await Bun.sleep(100);
  }
  expect(refused).toMatchObject({ code: "budget_exceeded" });
  // once the dead lease expires (2 s) and is swept, its reservation returns to the window: more requests fit
  const t1 = performance.now();
  const swept = async () => (await query(db.db, sql`SELECT 1 FROM ledger WHERE account_id = ${c.accountId} AND reason = 'lease expired: its instance stopped renewing it'`)).length > 0;
  while (!(await swept())) {
    if (performance.now() - t1 > 20_000) throw new Error("the dead lease was not swept");
    await fetch(b2.url + "/v1/account", { headers: { authorization: `Bearer ${c.key}` } });
    await Bun.sleep(100);
  }
  for (let i = 0; i < 5_000; i++) {
    const res = await routes.chat(b2.url, c.key);
    await res.arrayBuffer();
    if (res.status !== 200) break;
  }
  await fetch(b2.url + "/v1/account", { headers: { authorization: `Bearer ${c.key}` } });
  const before = (await windowRows(db.db, [c.accountId]))[0]!;
  expect(before.spent).toBeLessThanOrEqual(LIMIT);
  expect(LIMIT - before.spent).toBeLessThan(CHAT_COST);

  // the killed instance comes back: its journal is replayed; lost answers are charged only as far as the window allows
  const b1again = await server("b1");
  expect(b1again.logLines().some((l) => l.msg === "billing: replayed the settlement journal of a stopped process")).toBe(true);
  sampling = false;
  await sampler;
  const after = (await windowRows(db.db, [c.accountId]))[0]!;
  expect(after.spent).toBeLessThanOrEqual(LIMIT);
  const usage = await query<{ n: number }>(db.db, sql`SELECT count(*)::int AS n FROM usage_records WHERE ref IN ${sql.raw(`(${answered.map((r) => `'${r}'`).join(",")})`)}`);
  expect(usage[0]!.n).toBe(answered.length); // every answered request has its usage row (charged, or recorded short)
  const short = await query<{ n: number }>(db.db, sql`SELECT count(*)::int AS n FROM ledger WHERE account_id = ${c.accountId} AND kind = 'shortfall'`);
  console.log(`budget kill -9: ${answered.length} answered on the killed instance; window spent ${after.spent} of ${LIMIT} (${before.spent} before the replay; ${short[0]!.n} replayed charges found the window full: shortfall)`);
  await expectInvariants(db.db, [c.accountId]);
  await expectWindowInvariants(db.db, [c.accountId]);
}, 180_000);
