/**
 * PostgreSQL goes down (a cluster this test starts and stops itself) while requests are running:
 * what finishes during the outage is billed once the database is back, never dropped; approvals
 * from a lease continue for a bounded time, then (and for anything needing a statement) 503.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { sql } from "drizzle-orm";
import { openDatabase, query, type Database } from "../../src/db/index.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { newClientOn, spawnServer, type ChildServer } from "../support/child-server.ts";
import { startThrowawayPostgres, type ThrowawayPostgres } from "../support/throwaway-postgres.ts";
import { expectInvariants } from "./support.ts";

const messages = [{ role: "user", content: "Say three words." }];
const COST = 11 * 3 + 8 * 15;
const OFFLINE_MS = 6_000;

let pg: ThrowawayPostgres;
let fake: FakeOpenAI;
let server: ChildServer;
let url: string;

const dir = mkdtempSync(join(tmpdir(), "reelay-outage-"));

beforeAll(async () => {
  pg = await startThrowawayPostgres();
  const admin = postgres(pg.url, { max: 1, onnotice: () => {} });
  await admin.unsafe("CREATE DATABASE reelay");
  await admin.end();
  url = pg.url.replace(/\/postgres$/, "/reelay");
  fake = await startFakeOpenAI({ tokens: 8 });
  const models = join(dir, "models.json");
  writeFileSync(models, JSON.stringify({
    builtins: false,
    models: [{ id: "chat", plugin: "openai-compatible", options: { baseUrl: fake.url }, pricing: { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 }, maxOutputTokens: 8 }],
  }));
  server = await spawnServer({
    DATABASE_URL: url, REELAY_MODELS_FILE: models, REELAY_DATA_DIR: join(dir, "data"),
    REELAY_BILLING_OFFLINE_MS: String(OFFLINE_MS), REELAY_LEASE_TTL_MS: "30000", REELAY_KEY_CACHE_MS: "60000",
  });
}, 120_000);
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await server?.stop();
  await fake?.stop();
  await pg?.destroy();
}, 60_000);

/** Until the server refuses connections (pg_isready: 1 rejecting, 2 no response). */
async function untilUnreachable() {
  const bin = `/usr/lib/postgresql/${require("node:fs").readdirSync("/usr/lib/postgresql").sort().at(-1)}/bin/pg_isready`;
  while (Bun.spawnSync([bin, "-h", "127.0.0.1", "-p", String(pg.port)]).exitCode === 0) await Bun.sleep(50);
}

const chat = (key: string, extra: Record<string, unknown> = {}) =>
  fetch(server.url + "/v1/chat/completions", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "chat", messages, max_tokens: 8, ...extra }) });

test("a stream that ends during the outage is billed after it, approvals from a lease continue for a bounded time, then 503", async () => {
  const warm = await newClientOn(server, 10_000_000);
  const cold = await newClientOn(server, 10_000_000);
  for (let i = 0; i < 3; i++) expect((await chat(warm.key)).status).toBe(200); // warm: a lease on this instance
  expect((await chat(cold.key)).status).toBe(200); // its key is cached, but it has no lease

  fake.behave({ tokens: 8, delayBetweenChunksMs: 250 });
  const stream = await chat(warm.key, { stream: true });
  const streamRef = stream.headers.get("x-request-id")!;
  const reader = stream.body!.getReader();
  expect((await reader.read()).done).toBe(false);

  // -m fast terminates every backend at once; pg_ctl itself may take a while to return
  const stopping = pg.stop();
  const down = performance.now();
  await untilUnreachable();
  // the last statement that succeeded started before this; under load pg_ctl takes a while to get here
  const unreachable = performance.now();
  let text = "";
  for (;;) {
    const r = await reader.read();
    if (r.done) break;
    text += new TextDecoder().decode(r.value);
  }
  expect(text).toEndWith("data: [DONE]\n\n"); // the client got its whole answer during the outage
  fake.behave({});

  // within the offline window: approved from the lease, served, billed later
  const during = await chat(warm.key);
  expect(performance.now() - down).toBeLessThan(OFFLINE_MS);
  expect(during.status).toBe(200);
  const duringRef = during.headers.get("x-request-id")!;
  await during.arrayBuffer();
  // an account without a lease needs a statement: 503, nothing reached the upstream
  const upstreamCalls = fake.requests.length;
  const coldRes = await chat(cold.key);
  expect(coldRes.status).toBe(503);
  expect(((await coldRes.json()) as any).error).toMatchObject({ type: "service_unavailable", code: "service_unavailable" });
  expect(fake.requests.length).toBe(upstreamCalls);
  // past the offline window: the lease no longer approves either
  await Bun.sleep(Math.max(0, OFFLINE_MS + 200 - (performance.now() - unreachable)));
  const late = await chat(warm.key);
  expect(late.status).toBe(503);
  expect(late.headers.get("retry-after")).toBe("1");

  await stopping;
  await pg.start();
  const up = performance.now();
  const db: Database = await openDatabase({ databaseUrl: url, dataDir: "/nonexistent", poolSize: 2 });
  try {
    for (;;) {
      const rows = await query<{ ref: string; cost: number }>(db.db, sql`SELECT ref, cost::float8 AS cost FROM usage_records WHERE ref IN (${streamRef}, ${duringRef})`);
      if (rows.length === 2) {
        expect(rows.map((r) => Number(r.cost))).toEqual([COST, COST]);
        break;
      }
      expect(performance.now() - up).toBeLessThan(15_000);
      await Bun.sleep(100);
    }
    console.log(`settlements made during a ${Math.round(up - down)} ms outage landed ${Math.round(performance.now() - up)} ms after the database was back`);
    // served again, and the client sees every request it was answered
    expect((await chat(warm.key)).status).toBe(200);
    const acct = (await (await fetch(server.url + "/v1/account", { headers: { authorization: `Bearer ${warm.key}` } })).json()) as any;
    expect(acct).toMatchObject({ balance: 10_000_000 - 6 * COST, held: 0 });
    await expectInvariants(db.db, [warm.accountId, cold.accountId]);
  } finally {
    await db.close();
  }
}, 120_000);
