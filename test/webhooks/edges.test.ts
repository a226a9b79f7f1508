/**
 * Webhook deliveries at their edges, against the real Postgres and a real receiver server:
 *  - the retry window runs out (shrunk to 1 s by REELAY_WEBHOOK_RETRY_WINDOW_SECONDS): `failed`,
 *    nothing more is sent, a replay still works;
 *  - a receiver that never answers is cut off by the per-attempt timeout and the same live
 *    instance tries again (long before the attempt's lease would have lapsed);
 *  - a lease that lapsed while the attempt is on the wire (a stall): the instance sending it
 *    claims it back and keeps its one attempt, no second POST;
 *  - the SSRF guard at delivery time: a redirect (to another local receiver or to the metadata
 *    address) is the receiver's answer, never followed; a name that resolved to a public address
 *    at registration and resolves to a private one at delivery is refused then, without a
 *    connection (DNS is the one fake here: a resolver function, as no real DNS can be re-pointed).
 */
import { afterAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { openAndMigrate } from "../../src/boot.ts";
import { createLogger } from "../../src/logger.ts";
import { createDeliveryWorker } from "../../src/modules/webhooks/delivery-worker.ts";
import { loadSecretBox } from "../../src/modules/webhooks/secret-box.ts";
import { createEndpoint } from "../../src/modules/webhooks/service.ts";
import { createTestDatabase, dropDatabase, startTestServer, testConfig, type TestServer } from "../support/harness.ts";
import { client, pngBase64, scriptedEnv } from "../videos/support.ts";
import { startReceiver, until, verified, type Receiver } from "./receiver.ts";

const IMG = pngBase64();
const SECRET_KEY = "webhook-edges-secret-key-0123456789abcdef";
const MODELS = scriptedEnv([{ id: "fast", options: { durationMs: 50 } }]);
const servers: TestServer[] = [];
const receivers: Receiver[] = [];
afterAll(async () => {
  for (const r of receivers) await r.stop();
  for (const s of servers) await s.close();
});

async function server(env: Record<string, string>) {
  const s = await startTestServer({ ...MODELS, REELAY_SCHEDULER_POLL_MS: "50", REELAY_SECRET_KEY: SECRET_KEY, REELAY_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8", REELAY_WEBHOOK_POLL_MS: "100", ...env });
  servers.push(s);
  return s;
}

async function select(s: TestServer, q: (sql: postgres.Sql) => Promise<any[]>): Promise<any[]> {
  const sql = postgres(s.databaseUrl!, { max: 1, onnotice: () => {} });
  try {
    return await q(sql);
  } finally {
    await sql.end();
  }
}

function receiver() {
  const r = startReceiver();
  receivers.push(r);
  return r;
}

/** A client with an endpoint at `url`; `job()` submits a 1 s job and returns its id. */
async function subscriber(s: TestServer, url: string) {
  const { key } = await s.newClient();
  const h = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const call = async (method: string, path: string) => (await (await fetch(s.url + path, { method, headers: h })).json()) as any;
  const ep = (await (await fetch(`${s.url}/v1/webhooks`, { method: "POST", headers: h, body: JSON.stringify({ url }) })).json()) as any;
  if (!ep.id) throw new Error(`endpoint: ${JSON.stringify(ep)}`);
  return {
    ep,
    call,
    log: async () => (await call("GET", `/v1/webhooks/${ep.id}/deliveries`)).data as any[],
    async job() {
      const res = await client(s.url, key).submit({ model: "fast", prompt: "p", image: IMG, seconds: 1 });
      const body = (await res.json()) as any;
      if (res.status !== 202) throw new Error(`submit: ${res.status} ${JSON.stringify(body)}`);
      return body.id as string;
    },
  };
}

describe("the retry window", () => {
  test("a delivery still failing when its window runs out becomes `failed`; nothing more is sent; a replay sends it again", async () => {
    // a 1 s window with 100 ms base backoff: attempts at ~0, 0.1, 0.3, 0.7 s, then the next wait ends past the window
    const s = await server({ REELAY_WEBHOOK_RETRY_WINDOW_SECONDS: "1", REELAY_WEBHOOK_RETRY_BASE_MS: "100" });
    const r = receiver();
    r.script([], 500);
    const sub = await subscriber(s, `${r.url}/down`);
    const job = await sub.job();
    const [d] = await until(() => sub.log(), (l) => l[0]?.status === "failed", 15_000);
    expect(d).toMatchObject({ job_id: job, status: "failed", last_status: 500, last_error: "the receiver answered HTTP 500", next_attempt_at: null });
    expect(d.attempts).toBeGreaterThanOrEqual(2);
    expect(r.requests).toHaveLength(d.attempts);
    expect(new Set(r.requests.map((q) => q.headers["webhook-id"]))).toEqual(new Set([d.id]));
    // the last attempt started within the window; none after it
    const [row] = await select(s, (sql) => sql`SELECT extract(epoch FROM give_up_at - created_at)::float AS window, extract(epoch FROM last_attempt_at - created_at)::float AS last FROM webhook_deliveries WHERE id = ${d.id}`);
    expect(row.window).toBeCloseTo(1, 1);
    expect(row.last).toBeLessThan(1.5); // due within the window, claimed by the next poll (100 ms)
    const seen = r.requests.length;
    await Bun.sleep(1_500); // longer than any backoff this window allows
    expect(r.requests).toHaveLength(seen);
    expect((await sub.log())[0]).toMatchObject({ status: "failed", attempts: seen });

    // the receiver is fixed: a replay gets a fresh window and is delivered with the same webhook-id
    r.script([], 200);
    const replay = await sub.call("POST", `/v1/webhooks/deliveries/${d.id}/replay`);
    expect(replay).toMatchObject({ id: d.id, status: "pending" });
    await r.waitFor((x) => x.length === seen + 1);
    expect(r.requests.at(-1)!.headers["webhook-id"]).toBe(d.id);
    expect(verified(sub.ep.secret, r.requests.at(-1)!).data.id).toBe(job);
    expect((await until(() => sub.log(), (l) => l[0]?.status === "delivered"))[0]).toMatchObject({ status: "delivered", attempts: seen + 1, last_status: 200 });
  }, 30_000);
});

describe("a receiver that never answers", () => {
  test("the attempt is cut off by the per-attempt timeout and the live instance tries again, long before the lease would lapse", async () => {
    // timeout 400 ms; lease = timeout + 5 s: a retry within ~2 s can only come from the timeout
    const s = await server({ REELAY_WEBHOOK_TIMEOUT_MS: "400", REELAY_WEBHOOK_RETRY_BASE_MS: "1000" });
    const r = receiver();
    r.script(["hang"], 200);
    const sub = await subscriber(s, `${r.url}/slow`);
    const job = await sub.job();
    await r.waitFor((x) => x.length === 1);
    // between the two attempts the log says why the first one failed
    const [between] = await until(() => sub.log(), (l) => l[0]?.last_error !== null && l[0]?.last_error !== undefined, 5_000);
    expect(between).toMatchObject({ status: "pending", attempts: 1, last_status: null, last_error: "timeout: no answer within 400 ms" });
    await r.waitFor((x) => x.length === 2, 10_000);
    const [hung, retry] = r.requests;
    expect(hung!.answered).toBe(0);
    // reelay hung up on the first request at its timeout (it does not leave the connection open)
    expect(hung!.abortedAt).not.toBeNull();
    expect(hung!.abortedAt! - hung!.at).toBeGreaterThanOrEqual(350);
    expect(hung!.abortedAt! - hung!.at).toBeLessThan(2_000);
    // backoff after attempt 1: 500–1000 ms; the lease would have lapsed only after 5.4 s
    expect(retry!.at - hung!.at).toBeGreaterThanOrEqual(400 + 450);
    expect(retry!.at - hung!.at).toBeLessThan(4_000);
    expect(retry!.answered).toBe(200);
    expect(retry!.headers["webhook-id"]).toBe(hung!.headers["webhook-id"]);
    expect(verified(sub.ep.secret, retry!).data.id).toBe(job);
    const [done] = await until(() => sub.log(), (l) => l[0]?.status === "delivered");
    expect(done).toMatchObject({ status: "delivered", attempts: 2, last_status: 200, last_error: null });
    const [row] = await select(s, (sql) => sql`SELECT lease_owner FROM webhook_deliveries WHERE id = ${done.id}`);
    expect(row.lease_owner).toBe(s.deps.config.instanceId);
  }, 30_000);
});

describe("a lease that lapsed while its attempt is on the wire", () => {
  test("the instance sending it claims it back and keeps its one attempt: the receiver gets one POST", async () => {
    const s = await server({});
    const r = receiver();
    r.delay(1_500);
    const sub = await subscriber(s, `${r.url}/late`);
    await sub.job();
    await r.waitFor((x) => x.length === 1);
    // the lease runs out while the receiver is still answering, as when the event loop stalled past timeout + 5 s
    await select(s, (sql) => sql`UPDATE webhook_deliveries SET lease_expires_at = now() - interval '1 second' WHERE endpoint_id = ${sub.ep.id} RETURNING id`);
    const [done] = await until(() => sub.log(), (l) => l[0]?.status === "delivered");
    expect(done).toMatchObject({ status: "delivered", last_status: 200 });
    // polls every 100 ms ran while the first POST was unanswered; a second attempt would have been sent by one of them
    expect(r.requests.map((x) => ({ id: x.headers["webhook-id"], answered: x.answered }))).toEqual([{ id: done.id, answered: 200 }]);
  }, 30_000);
});

describe("the SSRF guard at delivery time", () => {
  test("a redirect is the receiver's answer: never followed, whether it points at another local receiver or at the metadata address", async () => {
    const s = await server({ REELAY_WEBHOOK_RETRY_BASE_MS: "100" });
    const r = receiver();
    const inner = receiver(); // allowed by REELAY_WEBHOOK_ALLOW_NETWORKS, yet must not be reached through a redirect
    r.script([{ status: 307, location: `${inner.url}/inside` }, { status: 302, location: "http://169.254.169.254/latest/meta-data/" }], 200);
    const sub = await subscriber(s, `${r.url}/hook`);
    const job = await sub.job();
    await r.waitFor((x) => x.some((q) => q.answered === 200), 10_000);
    expect(r.requests.map((q) => q.answered)).toEqual([307, 302, 200]);
    expect(inner.requests).toHaveLength(0);
    expect(new Set(r.requests.map((q) => q.path))).toEqual(new Set(["/hook"]));
    expect(verified(sub.ep.secret, r.requests[2]!).data.id).toBe(job);
    const [d] = await until(() => sub.log(), (l) => l[0]?.status === "delivered");
    expect(d).toMatchObject({ status: "delivered", attempts: 3, last_status: 200 });
  }, 30_000);

  test("a name that resolved to a public address at registration and to a private one at delivery is refused then, with no connection", async () => {
    const databaseUrl = await createTestDatabase();
    const r = receiver(); // listening on 127.0.0.1: where the name points at delivery time
    const host = "hooks.customer.test";
    let answer = "93.184.215.14"; // a public address: what DNS said at registration
    const lookups: string[] = [];
    const resolver = async (name: string) => {
      lookups.push(name);
      return [answer];
    };
    const config = (env: Record<string, string> = {}) =>
      testConfig({ DATABASE_URL: databaseUrl, REELAY_SECRET_KEY: SECRET_KEY, REELAY_WEBHOOK_RETRY_BASE_MS: "100", REELAY_WEBHOOK_POLL_MS: "100", ...env });
    const strict = config();
    const logger = createLogger(strict);
    const database = await openAndMigrate(strict, logger);
    const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
    try {
      const box = loadSecretBox(strict)!;
      await sql`INSERT INTO accounts (id, name) VALUES ('acct_dns', 'dns')`;
      const ep = await createEndpoint({ db: database.db, box: () => box, policy: { allowedNetworks: [], resolver } }, "acct_dns", { url: `http://${host}:${r.port}/in` });
      expect(ep.url).toBe(`http://${host}:${r.port}/in`);
      expect(lookups).toEqual([host]);
      // the outbox row a completed job writes (outbox.ts), for this endpoint
      await sql`INSERT INTO webhook_deliveries (id, account_id, endpoint_id, job_id, event_type, url, payload, give_up_at)
                VALUES ('msg_dns0000000000000000000000000001', 'acct_dns', ${ep.id}, 'vid_dns', 'video.generation.completed', ${ep.url}, '{"type":"video.generation.completed","data":{"id":"vid_dns"}}', now() + interval '1 hour')`;

      answer = "127.0.0.1"; // re-pointed: now a loopback address, which this server does not allow
      const worker = createDeliveryWorker({ config: strict, database, logger }, box, { resolver });
      worker.start();
      let row: any;
      try {
        for (let i = 0; ; i++) {
          [row] = await sql`SELECT status, attempts, last_status, last_error FROM webhook_deliveries WHERE id = 'msg_dns0000000000000000000000000001'`;
          if (row.attempts >= 3 && row.last_error) break;
          if (i > 200) throw new Error(`no refused attempts: ${JSON.stringify(row)}`);
          await Bun.sleep(50);
        }
      } finally {
        await worker.stop();
      }
      expect(row).toMatchObject({ status: "pending", last_status: null, last_error: `blocked_address: host ${host} resolves to a non-public address (127.0.0.1)` });
      // every attempt looked the name up again; none reached the address it resolved to
      expect(lookups.length).toBeGreaterThanOrEqual(1 + row.attempts);
      expect(r.requests).toHaveLength(0);

      // the same row, on an instance whose operator allows 127.0.0.0/8: delivered there, to the checked
      // address, with the name in Host (so the refusal above was the address check and nothing else)
      const allowing = config({ REELAY_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8" });
      const second = createDeliveryWorker({ config: allowing, database, logger }, box, { resolver });
      second.start();
      try {
        await r.waitFor((x) => x.length === 1, 10_000);
      } finally {
        await second.stop();
      }
      expect(r.requests[0]!.headers.host).toBe(`${host}:${r.port}`);
      expect(verified(ep.secret!, r.requests[0]!).data.id).toBe("vid_dns");
      const [done] = await sql`SELECT status FROM webhook_deliveries WHERE id = 'msg_dns0000000000000000000000000001'`;
      expect(done!.status).toBe("delivered");
    } finally {
      await sql.end();
      await database.close();
      await dropDatabase(databaseUrl);
    }
  }, 30_000);
});
