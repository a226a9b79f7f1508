/**
 * Webhook durability with real server processes on one Postgres: kill -9 while a delivery is on
 * the wire (and while a job is still running), restart → each event arrives, as one logical event
 * (one outbox row, one webhook-id). Two instances → each event sent once; both instances send.
 */
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { createTestDatabase, dropDatabase } from "../support/harness.ts";
import { newClientOn, spawnServer, type ChildServer } from "../support/child-server.ts";
import { client, pngBase64, scriptedEnv } from "../videos/support.ts";
import { startReceiver, verified, type Receiver } from "./receiver.ts";

const IMG = pngBase64();
const children: ChildServer[] = [];
const receivers: Receiver[] = [];
const databases: string[] = [];
afterEach(async () => {
  await Promise.all(children.splice(0).map((c) => c.kill9().catch(() => {})));
  for (const r of receivers.splice(0)) await r.stop();
});
afterAll(async () => {
  for (const d of databases) await dropDatabase(d);
});

const BASE_ENV = {
  REELAY_SECRET_KEY: "crash-test-secret-key-0123456789abcdefgh",
  REELAY_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
  REELAY_WEBHOOK_RETRY_BASE_MS: "200",
  REELAY_WEBHOOK_POLL_MS: "100",
  REELAY_SCHEDULER_POLL_MS: "50",
};

async function registerEndpoint(server: ChildServer, key: string, url: string): Promise<string> {
  const res = await fetch(`${server.url}/v1/webhooks`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ url }) });
  const body: any = await res.json();
  if (res.status !== 201) throw new Error(`endpoint: ${res.status} ${JSON.stringify(body)}`);
  return body.secret;
}

async function rows(databaseUrl: string, q: (sql: postgres.Sql) => Promise<any>) {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    return await q(sql);
  } finally {
    await sql.end();
  }
}

describe("crash safety", () => {
  test("kill -9 with a delivery on the wire and a job still running → after restart each event arrives, one logical event each", async () => {
    const databaseUrl = await createTestDatabase();
    databases.push(databaseUrl);
    const r = startReceiver();
    receivers.push(r);
    r.script(["hang"]); // the first delivery reaches the receiver and gets no answer
    const env = {
      ...BASE_ENV,
      DATABASE_URL: databaseUrl,
      // the lease of an attempt is timeout + 5 s: after the kill, the row is claimable 8 s after it was claimed
      REELAY_WEBHOOK_TIMEOUT_MS: "3000",
      REELAY_SCHEDULER_LEASE_MS: "1500",
      ...scriptedEnv([{ id: "fast", options: { durationMs: 0 } }, { id: "later", options: { durationMs: 2500, pollIntervalMs: 100 } }]),
    };
    const a = await spawnServer({ ...env, REELAY_INSTANCE_ID: "instance-a" });
    children.push(a);
    const c = await newClientOn(a);
    const secret = await registerEndpoint(a, c.key, `${r.url}/hooks`);
    const api = client(a.url, c.key);
    const done = ((await (await api.submit({ model: "fast", prompt: "p", image: IMG, seconds: 1 })).json()) as any).id;
    const running = ((await (await api.submit({ model: "later", prompt: "p", image: IMG, seconds: 1 })).json()) as any).id;

    await r.waitFor((x) => x.length === 1);
    expect((await api.get(running)).status).toBe(200);
    await a.kill9();
    const mid = await rows(databaseUrl, (sql) => sql`SELECT job_id, status, attempts, lease_owner FROM webhook_deliveries`);
    expect(mid).toEqual([{ job_id: done, status: "pending", attempts: 1, lease_owner: "instance-a" }]);
    expect(((await rows(databaseUrl, (sql) => sql`SELECT status FROM video_jobs WHERE id = ${running}`)) as any)[0].status).toBe("processing");

    r.release();
    const b = await spawnServer({ ...env, REELAY_INSTANCE_ID: "instance-b" });
    children.push(b);
    await r.waitFor((x) => x.filter((q) => q.answered === 200).length === 2, 30_000);
    await Bun.sleep(500);

    const byJob = new Map<string, string[]>();
    for (const q of r.requests) {
      const event = verified(secret, q);
      byJob.set(event.data.id, [...(byJob.get(event.data.id) ?? []), q.headers["webhook-id"]!]);
    }
    // the interrupted delivery was sent again with the same webhook-id; the late job's event once
    expect(byJob.get(done)).toHaveLength(2);
    expect(new Set(byJob.get(done)).size).toBe(1);
    expect(byJob.get(running)).toHaveLength(1);
    const after = await rows(databaseUrl, (sql) => sql`SELECT job_id, status, attempts, lease_owner FROM webhook_deliveries ORDER BY created_at`);
    expect(after).toEqual([
      { job_id: done, status: "delivered", attempts: 2, lease_owner: "instance-b" },
      { job_id: running, status: "delivered", attempts: 1, lease_owner: "instance-b" },
    ]);
  }, 60_000);
});

describe("several instances", () => {
  test("two instances share the outbox: every event sent exactly once, by both instances", async () => {
    const databaseUrl = await createTestDatabase();
    databases.push(databaseUrl);
    const r = startReceiver();
    receivers.push(r);
    r.delay(40); // a receiver that takes a moment, so one instance's slots are not enough
    const env = {
      ...BASE_ENV,
      DATABASE_URL: databaseUrl,
      REELAY_WEBHOOK_CONCURRENCY: "4",
      ...scriptedEnv([{ id: "fast", options: { durationMs: 100, maxConcurrency: 20 } }]),
    };
    const [a, b] = await Promise.all([spawnServer({ ...env, REELAY_INSTANCE_ID: "instance-a" }), spawnServer({ ...env, REELAY_INSTANCE_ID: "instance-b" })]);
    children.push(a, b);
    const c = await newClientOn(a, 10_000_000, { concurrent_video_jobs: 1000 });
    const secret = await registerEndpoint(a, c.key, `${r.url}/hooks`);
    const ids = await Promise.all(Array.from({ length: 40 }, async (_, i) => {
      const res = await client(i % 2 ? a.url : b.url, c.key).submit({ model: "fast", prompt: `p${i}`, image: IMG, seconds: 1 });
      const body: any = await res.json();
      if (res.status !== 202) throw new Error(`submit ${i}: ${res.status} ${JSON.stringify(body)}`);
      return body.id as string;
    }));
    await r.waitFor((x) => x.length >= 40, 20_000).catch(async (e) => {
      // say where the events got stuck: jobs not final, or deliveries not sent
      const jobs = await rows(databaseUrl, (sql) => sql`SELECT status, count(*)::int AS n FROM video_jobs GROUP BY status`);
      const outbox = await rows(databaseUrl, (sql) => sql`SELECT status, attempts, last_error, count(*)::int AS n FROM webhook_deliveries GROUP BY 1, 2, 3`);
      throw new Error(`${e.message}\njobs: ${JSON.stringify(jobs)}\noutbox: ${JSON.stringify(outbox)}`);
    });
    await Bun.sleep(1000);
    expect(r.requests).toHaveLength(40);
    const events = r.requests.map((q) => verified(secret, q));
    expect(new Set(events.map((e) => e.data.id))).toEqual(new Set(ids));
    expect(new Set(r.requests.map((q) => q.headers["webhook-id"])).size).toBe(40);
    const senders = await rows(databaseUrl, (sql) => sql`SELECT lease_owner, count(*)::int AS n FROM webhook_deliveries WHERE status = 'delivered' GROUP BY lease_owner ORDER BY lease_owner`);
    expect(senders.map((s: any) => s.lease_owner)).toEqual(["instance-a", "instance-b"]);
    expect(senders.reduce((n: number, s: any) => n + s.n, 0)).toBe(40);
  }, 120_000);
});
