/**
 * kill -9 under load, measured. Each finished request's settlement is journaled before its response
 * completes; a restart on the same data directory replays it, so nothing finished is lost. What a
 * kill costs until then (settlements not yet flushed) is counted and printed; requests in flight at
 * the kill are never charged. A dead instance's lease goes back to the account after its TTL.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { openDatabase, query, type Database } from "../../src/db/index.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { newClientOn, spawnServer, type ChildServer } from "../support/child-server.ts";
import { createTestDatabase, dropDatabase } from "../support/harness.ts";
import { expectInvariants } from "./support.ts";

const messages = [{ role: "user", content: "Say three words." }];
const COST = 11 * 3 + 8 * 15;

let fake: FakeOpenAI;
let url: string;
let db: Database;
let dir: string;
let models: string;
const running: ChildServer[] = [];

beforeAll(async () => {
  fake = await startFakeOpenAI({ tokens: 8 });
  dir = mkdtempSync(join(tmpdir(), "reelay-kill9-"));
  models = join(dir, "models.json");
  writeFileSync(models, JSON.stringify({
    builtins: false,
    models: [{ id: "chat", plugin: "openai-compatible", options: { baseUrl: fake.url }, pricing: { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 }, maxOutputTokens: 8 }],
  }));
  url = await createTestDatabase();
  db = await openDatabase({ databaseUrl: url, dataDir: "/nonexistent", poolSize: 2 });
}, 60_000);
afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
  rmSync(dir, { recursive: true, force: true });
  await db?.close();
  await fake?.stop();
  if (url) await dropDatabase(url);
}, 60_000);

async function server(name: string, env: Record<string, string> = {}) {
  const s = await spawnServer({ DATABASE_URL: url, REELAY_MODELS_FILE: models, REELAY_DATA_DIR: join(dir, name), REELAY_HOLD_SWEEP_MS: "300", ...env });
  running.push(s);
  return s;
}

const chat = (s: ChildServer, key: string, extra: Record<string, unknown> = {}) =>
  fetch(s.url + "/v1/chat/completions", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "chat", messages, max_tokens: 8, ...extra }) });

/** refs (x-request-id) that have a usage row */
async function billed(refs: string[]): Promise<Set<string>> {
  const rows = await query<{ ref: string }>(db.db, sql`SELECT ref FROM usage_records WHERE ref IN ${sql.raw(`(${refs.map((r) => `'${r}'`).join(",") || "''"})`)}`);
  return new Set(rows.map((r) => r.ref));
}

const accountRow = async (id: string) => (await query<{ balance: number; held: number }>(db.db, sql`SELECT balance::float8 AS balance, held::float8 AS held FROM accounts WHERE id = ${id}`))[0]!;

async function eventually(what: string, fn: () => Promise<boolean>, timeoutMs: number) {
  const t0 = performance.now();
  while (!(await fn())) {
    if (performance.now() - t0 > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await Bun.sleep(100);
  }
}

test("kill -9 under load, restart on the same data directory: every answered request charged exactly once; in-flight ones never", async () => {
  const a = await server("a");
  const c = await newClientOn(a, 100_000_000);
  const done: string[] = [];
  await Promise.all(Array.from({ length: 8 }, async () => {
    for (let i = 0; i < 6; i++) {
      const res = await chat(a, c.key);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      done.push(res.headers.get("x-request-id")!);
    }
  }));
  // a stream that is still running when the process dies
  fake.behave({ tokens: 8, delayBetweenChunksMs: 5_000 });
  const inflight = await chat(a, c.key, { stream: true });
  fake.behave({});
  const inflightRef = inflight.headers.get("x-request-id")!;
  const firstChunk = await inflight.body!.getReader().read();
  expect(firstChunk.done).toBe(false);
  await a.kill9();

  await Bun.sleep(500); // a batch statement sent just before the kill still commits
  const landedBeforeRestart = (await billed(done)).size;
  console.log(`kill -9 right after ${done.length} answered requests: ${done.length - landedBeforeRestart} settlements were not in the database yet (journaled)`);
  const dead = await query<{ n: number }>(db.db, sql`SELECT count(*)::int AS n FROM holds WHERE account_id = ${c.accountId} AND kind = 'lease' AND state = 'open'`);
  expect(dead[0]!.n).toBe(1); // the dead instance's lease is still open (TTL not over)

  const a2 = await server("a"); // same data directory: its journal is replayed before it serves
  expect(await billed(done)).toEqual(new Set(done));
  expect((await billed([inflightRef])).size).toBe(0);
  const leases = await query<{ state: string; reason: string }>(db.db, sql`
    SELECT h.state, (SELECT reason FROM ledger l WHERE l.hold_id = h.id ORDER BY l.id DESC LIMIT 1) AS reason
    FROM holds h WHERE h.account_id = ${c.accountId} AND h.kind = 'lease'`);
  expect(leases).toEqual([{ state: "released", reason: "owner restarted: lease released after its journal was replayed" }]);
  expect(await accountRow(c.accountId)).toEqual({ balance: 100_000_000 - done.length * COST, held: 0 });
  expect(a2.logLines().some((l) => l.msg === "billing: replayed the settlement journal of a stopped process")).toBe(true);
  await expectInvariants(db.db, [c.accountId]);
}, 120_000);

test("kill -9 mid-traffic, never restarted: its lease returns after the TTL, the loss is bounded; a later restart still bills it, once", async () => {
  // its lease and any exact hold of a request in flight at the kill expire after 2 s
  // at debug level it logs every batch that lands: how long its oldest settlement waited in memory
  const b1 = await server("b1", { REELAY_LEASE_TTL_MS: "2000", REELAY_HOLD_TTL_SECONDS: "2", REELAY_LOG_LEVEL: "debug" });
  const b2 = await server("b2");
  const c = await newClientOn(b1, 100_000_000);
  const answered: Array<{ ref: string; at: number }> = [];
  let killedAt = 0;
  const loops = Array.from({ length: 8 }, async () => {
    for (;;) {
      try {
        const res = await chat(b1, c.key);
        await res.arrayBuffer();
        if (res.status === 200) answered.push({ ref: res.headers.get("x-request-id")!, at: performance.now() });
      } catch {
        return; // the process is gone
      }
    }
  });
  await eventually("traffic", async () => answered.length >= 40, 60_000);
  await Bun.sleep(700 + Math.random() * 300); // several batches land, then a kill at no particular point of the flush cycle
  killedAt = performance.now();
  await b1.kill9();
  await Promise.all(loops);

  const refs = answered.map((x) => x.ref);
  await Bun.sleep(500); // a batch statement sent just before the kill still commits
  const landed = await billed(refs);
  const lost = answered.filter((x) => !landed.has(x.ref));
  const window = lost.length ? Math.round(killedAt - Math.min(...lost.map((x) => x.at))) : 0;
  // Only the most recent ones can be missing. A settlement is queued when its response completes and
  // written by the next statement: after the flush interval (25 ms) when none is in flight, else
  // right after the one in flight. So a settlement waits at most the flush interval or the statement
  // before it, plus its own statement; and a kill loses what was queued after the last statement was
  // sent (that one still commits): at most the flush interval or that statement's duration.
  // Statements take ~5 ms on a quiet machine and hundreds of ms on this shared one under parallel
  // tests, so the bounds are the design's in this run's own figures (the instance logs every
  // statement at debug level), with a margin for a busy event loop. The client notes `at` after
  // reading the answer, later than the settlement was queued: the measured age is at most the real one.
  const statements = b1.logLines().filter((l) => l.msg === "billing: batch landed") as Array<{ settlements: number; oldestMs: number | null; statementMs: number }>;
  const batches = statements.filter((b) => b.settlements > 0);
  expect(batches.length).toBeGreaterThan(0);
  const slowest = Math.max(...statements.map((b) => b.statementMs));
  const longestWait = Math.max(...batches.map((b) => b.oldestMs!));
  console.log(`kill -9 mid-traffic: ${lost.length} of ${answered.length} answered requests not in the database (answered in the last ${window} ms before the kill); before it ${batches.length} batches landed, the longest wait ${longestWait} ms, the slowest statement ${slowest} ms`);
  const MARGIN = 150;
  for (const b of batches) expect(b.oldestMs!).toBeLessThan(25 + 2 * slowest + MARGIN);
  for (const x of lost) expect(killedAt - x.at).toBeLessThan(Math.max(25, slowest) + MARGIN);

  // the other instance's sweeper returns what the dead one reserved after the TTL
  await eventually("dead instance's reservations released", async () => (await accountRow(c.accountId)).held === 0, 15_000);
  const swept = await query<{ reason: string }>(db.db, sql`SELECT reason FROM ledger WHERE account_id = ${c.accountId} AND kind = 'lease_return' ORDER BY id DESC LIMIT 1`);
  expect(swept[0]!.reason).toBe("lease expired: its instance stopped renewing it");
  // what was charged is exactly the usage rows (a request settled at the kill but never answered is charged too)
  const usageRows = async () => (await query<{ n: number }>(db.db, sql`SELECT count(*)::int AS n FROM usage_records WHERE account_id = ${c.accountId}`))[0]!.n;
  const before = await usageRows();
  expect(before).toBeGreaterThanOrEqual(landed.size);
  expect(before - landed.size).toBeLessThanOrEqual(8); // at most one per request loop in flight
  expect((await accountRow(c.accountId)).balance).toBe(100_000_000 - before * COST);

  // the instance comes back later on its data directory: the lost ones are charged now, from available credit, once
  await server("b1");
  expect(await billed(refs)).toEqual(new Set(refs));
  const after = await usageRows();
  // the replay adds the answered ones that were lost, and may add a request settled in the journal
  // just before the kill whose answer never left (its client saw the connection drop: charged, as
  // designed); rows beyond the answered ones stay at most one per request loop in flight
  expect(after - before).toBeGreaterThanOrEqual(answered.length - landed.size);
  expect(after - answered.length).toBeLessThanOrEqual(8);
  expect(await accountRow(c.accountId)).toEqual({ balance: 100_000_000 - after * COST, held: 0 });
  await expectInvariants(db.db, [c.accountId]);
  void b2;
}, 120_000);
