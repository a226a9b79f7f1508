/**
 * Durability: the server is a real child process. kill -9 mid-processing, restart → every job ends,
 * each completed job is charged exactly once, no hold stays open, nothing was submitted twice.
 * Two processes on one database → each job submitted to the provider exactly once.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import postgres from "postgres";
import { createTestDatabase, dropDatabase } from "../support/harness.ts";
import { client, pngBase64, PRICE_PER_SECOND, scriptedEnv } from "./support.ts";
import { spawnServer, newClientOn, type ChildServer } from "../support/child-server.ts";

const IMG = pngBase64();
const children: ChildServer[] = [];
const databases: string[] = [];
afterEach(async () => {
  await Promise.all(children.splice(0).map((c) => c.kill9().catch(() => {})));
});
afterAll(async () => {
  for (const d of databases) await dropDatabase(d);
});

function submitsPerJob(file: string) {
  const counts = new Map<string, number>();
  const pids = new Set<string>();
  if (!existsSync(file)) return { counts, pids };
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const [kind, jobId, pid] = line.split(" ");
    if (kind !== "submit" || !jobId) continue;
    counts.set(jobId, (counts.get(jobId) ?? 0) + 1);
    pids.add(pid!);
  }
  return { counts, pids };
}

async function ledgerFacts(databaseUrl: string, accountId: string) {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    const [acct] = await sql`SELECT balance::float8 AS balance, held::float8 AS held FROM accounts WHERE id = ${accountId}`;
    const [{ open }] = await sql`SELECT count(*)::int AS open FROM holds WHERE account_id = ${accountId} AND state = 'open'`;
    const charges = await sql`SELECT ref, count(*)::int AS n, sum(-amount)::float8 AS total FROM ledger WHERE account_id = ${accountId} AND kind = 'charge' GROUP BY ref`;
    const [{ sum }] = await sql`SELECT coalesce(sum(amount), 0)::float8 AS sum FROM ledger WHERE account_id = ${accountId}`;
    return { balance: acct!.balance, held: acct!.held, openHolds: open, charges: new Map(charges.map((r: any) => [r.ref, { n: r.n, total: r.total }])), ledgerSum: sum };
  } finally {
    await sql.end();
  }
}

describe("crash safety", () => {
  test("kill -9 while jobs are processing, restart → all final, completed charged once, no open holds, no resubmits", async () => {
    const databaseUrl = await createTestDatabase();
    databases.push(databaseUrl);
    const record = join(tmpdir(), `reelay-crash-${Date.now()}.log`);
    const env = {
      DATABASE_URL: databaseUrl,
      REELAY_SCHEDULER_POLL_MS: "50",
      REELAY_SCHEDULER_LEASE_MS: "1500",
      ...scriptedEnv([
        { id: "remote", options: { durationMs: 2500, pollIntervalMs: 100, maxConcurrency: 10, recordFile: record } },
        { id: "remote-broken", options: { durationMs: 2500, pollIntervalMs: 100, recordFile: record, fail: { code: "boom", message: "provider failed" } } },
      ]),
    };
    const a = await spawnServer(env);
    children.push(a);
    const c = await newClientOn(a, 10_000_000);
    const apiA = client(a.url, c.key);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(((await (await apiA.submit({ model: "remote", prompt: `p${i}`, image: IMG, seconds: 2 })).json()) as any).id);
    const broken: string = ((await (await apiA.submit({ model: "remote-broken", prompt: "b", image: IMG, seconds: 3 })).json()) as any).id;
    // wait until every job has been handed to the provider, then kill mid-processing
    for (let i = 0; i < 100; i++) {
      const states = await Promise.all([...ids, broken].map(async (id) => ((await (await apiA.get(id)).json()) as any).status));
      if (states.every((st) => st === "processing")) break;
      await Bun.sleep(50);
    }
    await a.kill9();
    const mid = await ledgerFacts(databaseUrl, c.accountId);
    expect(mid.openHolds).toBe(7);
    expect(mid.charges.size).toBe(0);

    const b = await spawnServer(env);
    children.push(b);
    const apiB = client(b.url, c.key);
    const finals = await Promise.all([...ids, broken].map((id) => apiB.waitFinal(id, 40_000)));
    expect(finals.slice(0, 6).map((f) => f.status)).toEqual(Array(6).fill("completed"));
    expect(finals[6]).toMatchObject({ status: "failed", error: { code: "boom" } });

    const after = await ledgerFacts(databaseUrl, c.accountId);
    expect(after.openHolds).toBe(0);
    expect(after.held).toBe(0);
    for (const id of ids) expect(after.charges.get(id)).toEqual({ n: 1, total: 2 * PRICE_PER_SECOND });
    expect(after.charges.has(broken)).toBe(false);
    expect(after.balance).toBe(10_000_000 - 6 * 2 * PRICE_PER_SECOND);
    expect(after.ledgerSum).toBe(after.balance);
    // handles were saved before the crash: the restarted server polled them, it did not resubmit
    const { counts } = submitsPerJob(record);
    for (const id of [...ids, broken]) expect(counts.get(id)).toBe(1);
  }, 60_000);
});

describe("several instances on one database", () => {
  test("two server processes share the queue; no job is submitted twice; each completed job charged once", async () => {
    const databaseUrl = await createTestDatabase();
    databases.push(databaseUrl);
    const record = join(tmpdir(), `reelay-two-${Date.now()}.log`);
    const env = {
      DATABASE_URL: databaseUrl,
      REELAY_SCHEDULER_POLL_MS: "20",
      REELAY_SCHEDULER_LEASE_MS: "2000",
      ...scriptedEnv([{ id: "remote", options: { durationMs: 300, pollIntervalMs: 50, maxConcurrency: 4, recordFile: record } }]),
    };
    const [a, b] = await Promise.all([spawnServer(env), spawnServer(env)]);
    children.push(a, b);
    const c = await newClientOn(a, 10_000_000, { concurrent_video_jobs: 1000 });
    const api = client(a.url, c.key);
    const ids = await Promise.all(Array.from({ length: 40 }, async (_, i) => ((await (await api.submit({ model: "remote", prompt: `p${i}`, image: IMG, seconds: 1 })).json()) as any).id as string));
    const finals = await Promise.all(ids.map((id) => client(b.url, c.key).waitFinal(id, 40_000)));
    expect(finals.every((f) => f.status === "completed")).toBe(true);
    const { counts, pids } = submitsPerJob(record);
    expect(counts.size).toBe(40);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(pids.size).toBe(2); // both instances did work
    const facts = await ledgerFacts(databaseUrl, c.accountId);
    expect(facts.openHolds).toBe(0);
    expect([...facts.charges.values()].every((x) => x.n === 1 && x.total === PRICE_PER_SECOND)).toBe(true);
    expect(facts.balance).toBe(10_000_000 - 40 * PRICE_PER_SECOND);
  }, 60_000);
});
