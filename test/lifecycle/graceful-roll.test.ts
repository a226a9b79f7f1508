/**
 * Graceful shutdown behind a load balancer: two instances on one PostgreSQL database behind a
 * round-robin balancer that checks /readyz (load-balancer.ts), steady chat traffic (plain and
 * streamed) through it while each instance in turn gets SIGTERM, exits 0 and is started again.
 * No client sees an error; one long stream open on the stopping instance past its drain timeout
 * ends with the documented `server_shutting_down` error event and is billed for what it delivered;
 * every answered request is charged exactly once and nothing else is; the ledger equals the balance.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { openDatabase, query, type Database } from "../../src/db/index.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { newClientOn, spawnServer, type ChildServer } from "../support/child-server.ts";
import { createTestDatabase, dropDatabase, freePort } from "../support/harness.ts";
import { expectInvariants } from "../billing/support.ts";
import { startLoadBalancer, type LoadBalancer } from "./load-balancer.ts";

const dir = mkdtempSync(join(tmpdir(), "reelay-roll-"));
let fake: FakeOpenAI;
let url: string;
let db: Database;
let lb: LoadBalancer;
const servers: ChildServer[] = [];
const ports = [freePort(), freePort()];
let env: (i: number) => Record<string, string>;

beforeAll(async () => {
  fake = await startFakeOpenAI({ tokens: 8 });
  // "slow": a stream of 40 tokens, one every 150 ms (6 s): longer than the drain timeout below
  fake.behave({ tokens: 40, delayBetweenChunksMs: 150 }, { model: "slow" });
  const models = join(dir, "models.json");
  const pricing = { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 };
  writeFileSync(models, JSON.stringify({
    builtins: false,
    models: [
      { id: "chat", plugin: "openai-compatible", options: { baseUrl: fake.url, upstreamModel: "fake-model" }, pricing, maxOutputTokens: 8 },
      { id: "slow", plugin: "openai-compatible", options: { baseUrl: fake.url, upstreamModel: "slow" }, pricing, maxOutputTokens: 40 },
    ],
  }));
  url = await createTestDatabase();
  env = (i: number) => ({ DATABASE_URL: url, REELAY_MODELS_FILE: models, REELAY_DATA_DIR: join(dir, `data-${i}`), REELAY_INSTANCE_ID: `roll-${i}`, REELAY_SHUTDOWN_DRAIN_DELAY_MS: "1000", REELAY_SHUTDOWN_GRACE_MS: "2000", REELAY_LOG_LEVEL: "info" });
  servers.push(await spawnServer(env(0), { port: ports[0] }), await spawnServer(env(1), { port: ports[1] }));
  db = await openDatabase({ databaseUrl: url, dataDir: "/nonexistent", poolSize: 2 });
  lb = startLoadBalancer(servers.map((s) => s.url), 100);
  await until(async () => lb.healthy().length === 2, 30_000);
}, 120_000);
afterAll(async () => {
  await lb?.stop();
  await Promise.all(servers.map((s) => s.stop()));
  await db?.close();
  await fake?.stop();
  if (url) await dropDatabase(url);
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

async function until(fn: () => Promise<boolean>, timeoutMs = 10_000) {
  const t0 = performance.now();
  while (!(await fn())) {
    if (performance.now() - t0 > timeoutMs) throw new Error(`not within ${timeoutMs} ms`);
    await Bun.sleep(50);
  }
}

interface Outcome {
  requestId: string | null;
  status: number;
  ok: boolean;
  detail?: string;
}

async function chatOnce(key: string, stream: boolean, model = "chat"): Promise<Outcome & { events?: string[] }> {
  try {
    const res = await fetch(lb.url + "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [{ role: "user", content: "Say some words." }], stream }),
    });
    const requestId = res.headers.get("x-request-id");
    const text = await res.text();
    if (!stream) return { requestId, status: res.status, ok: res.status === 200, detail: res.status === 200 ? undefined : text.slice(0, 300) };
    const events = text.split("\n\n").filter(Boolean).map((e) => e.replace(/^data: /, ""));
    return { requestId, status: res.status, ok: res.status === 200 && events.at(-1) === "[DONE]", detail: events.at(-1), events };
  } catch (e) {
    return { requestId: null, status: 0, ok: false, detail: String(e) };
  }
}

test("SIGTERM and restart of each instance under load: 0 client errors, the one long stream cut with an error event and billed on delivery, every answer charged once", async () => {
  const CREDIT = 200_000_000;
  const c = await newClientOn(servers[0]!, CREDIT);
  const outcomes: Outcome[] = [];
  let running = true;
  const workers = Array.from({ length: 4 }, async (_, w) => {
    for (let i = 0; running; i++) outcomes.push(await chatOnce(c.key, (i + w) % 2 === 0));
  });

  const cuts: Array<Outcome & { events?: string[] }> = [];
  for (const i of [0, 1]) {
    await Bun.sleep(500);
    // a long stream on the instance about to stop: started directly on it (the balancer would pick either)
    const long = fetch(servers[i]!.url + "/v1/chat/completions", {
      method: "POST",
      headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "slow", messages: [{ role: "user", content: "Tell a long story." }], max_tokens: 40, stream: true }),
    }).then(async (res) => ({ requestId: res.headers.get("x-request-id"), status: res.status, ok: false, events: (await res.text()).split("\n\n").filter(Boolean).map((e) => e.replace(/^data: /, "")) }));
    await Bun.sleep(600);
    const stopping = servers[i]!;
    stopping.proc.kill("SIGTERM");
    // out of rotation within the drain delay, before the listener closes
    await until(async () => !lb.healthy().includes(stopping.url), 1_000);
    expect(await stopping.proc.exited).toBe(0);
    cuts.push(await long);
    servers[i] = await spawnServer(env(i), { port: ports[i] });
    await until(async () => lb.healthy().length === 2, 30_000);
  }
  await Bun.sleep(500);
  running = false;
  await Promise.all(workers);

  const failed = outcomes.filter((o) => !o.ok);
  expect(failed).toEqual([]);
  expect(outcomes.length).toBeGreaterThan(20);
  for (const cut of cuts) {
    expect(cut.status).toBe(200);
    const last = JSON.parse(cut.events!.at(-1)!);
    expect(last.error.code).toBe("server_shutting_down");
    const delivered = cut.events!.slice(0, -1).filter((e) => e.includes('"content"')).length;
    expect(delivered).toBeGreaterThan(0);
    expect(delivered).toBeLessThan(40);
  }

  // the charges: one usage row per answered request (plain, streamed, cut), nothing for anything else
  await until(async () => {
    const [r] = await query<{ n: number }>(db.db, sql`SELECT count(*)::int AS n FROM usage_records WHERE account_id = ${c.accountId}`);
    return r!.n >= outcomes.length + cuts.length;
  });
  const rows = await query<{ ref: string; cost: number; delivered_tokens: number | null; error_code: string | null }>(db.db, sql`
    SELECT ref, cost::float8 AS cost, delivered_tokens, error_code FROM usage_records WHERE account_id = ${c.accountId}`);
  expect(rows.map((r) => r.ref).sort()).toEqual([...outcomes, ...cuts].map((o) => o.requestId!).sort());
  for (const cut of cuts) {
    const row = rows.find((r) => r.ref === cut.requestId)!;
    expect(row.error_code).toBe("server_shutting_down");
    expect(row.delivered_tokens).toBe(cut.events!.slice(0, -1).filter((e) => e.includes('"content"')).length);
    expect(row.cost).toBeGreaterThan(0);
  }
  const [acct] = await query<{ balance: number; held: number }>(db.db, sql`SELECT balance::float8 AS balance, held::float8 AS held FROM accounts WHERE id = ${c.accountId}`);
  expect(Number(acct!.balance)).toBe(CREDIT - rows.reduce((s, r) => s + Number(r.cost), 0));
  await expectInvariants(db.db, [c.accountId]);
}, 180_000);
