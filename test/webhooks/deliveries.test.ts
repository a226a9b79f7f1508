/**
 * Webhooks end to end against the real Postgres: a real receiver server, signatures verified with
 * the `standardwebhooks` library, retries, 410, replays, the delivery log, the SSRF guard, and what
 * one account can see of another's.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import postgres from "postgres";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { client, pngBase64, scriptedEnv } from "../videos/support.ts";
import { startReceiver, until, verified, type Receiver } from "./receiver.ts";

const IMG = pngBase64();
const SECRET_KEY = "webhook-test-secret-key-0123456789abcdef";
let s: TestServer;
const receivers: Receiver[] = [];

const MODELS = scriptedEnv([
  { id: "fast", options: { durationMs: 100 } },
  { id: "broken", options: { fail: { code: "nsfw_rejected", message: "the provider refused the content" } } },
  { id: "slow", options: { durationMs: 60_000, maxConcurrency: 100 } },
]);

beforeAll(async () => {
  s = await startTestServer({
    ...MODELS,
    REELAY_SCHEDULER_POLL_MS: "50",
    REELAY_SECRET_KEY: SECRET_KEY,
    REELAY_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
    REELAY_WEBHOOK_RETRY_BASE_MS: "150",
    REELAY_WEBHOOK_POLL_MS: "100",
  });
});
afterAll(async () => {
  for (const r of receivers) await r.stop();
  await s?.close();
});

function receiver() {
  const r = startReceiver();
  receivers.push(r);
  return r;
}

function api(key: string) {
  const h = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(s.url + path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as any };
  };
  return {
    ...client(s.url, key),
    call,
    createEndpoint: (body: unknown) => call("POST", "/v1/webhooks", body),
    deliveries: (q = "") => call("GET", `/v1/webhooks/deliveries${q}`),
  };
}

async function submit(a: ReturnType<typeof api>, body: Record<string, unknown>): Promise<string> {
  const res = await a.submit({ prompt: "p", image: IMG, seconds: 1, ...body });
  const j: any = await res.json();
  if (res.status !== 202) throw new Error(`submit: ${res.status} ${JSON.stringify(j)}`);
  return j.id;
}

describe("registered endpoints", () => {
  test("completed, failed and cancelled jobs each deliver one event, verified with standardwebhooks", async () => {
    const r = receiver();
    const c = await s.newClient();
    const a = api(c.key);
    const ep = await a.createEndpoint({ url: `${r.url}/hooks`, description: "all final events" });
    expect(ep.status).toBe(201);
    expect(ep.body).toMatchObject({ object: "webhook_endpoint", url: `${r.url}/hooks`, enabled: true, events: ["video.generation.completed", "video.generation.failed", "video.generation.cancelled"] });
    expect(ep.body.id).toMatch(/^we_/);
    expect(ep.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const secret: string = ep.body.secret;

    const done = await submit(a, { model: "fast" });
    const failed = await submit(a, { model: "broken" });
    const cancelled = await submit(a, { model: "slow" });
    await a.waitFinal(done);
    await a.waitFinal(failed);
    expect((await a.cancel(cancelled)).status).toBe(200);

    await r.waitFor((x) => x.length >= 3);
    await until(() => a.deliveries(), (l) => l.body.data.length === 3 && l.body.data.every((d: any) => d.status === "delivered"));
    await Bun.sleep(300); // nothing more may arrive
    expect(r.requests).toHaveLength(3);
    const events = r.requests.map((req) => ({ req, event: verified(secret, req) }));
    const byJob = new Map(events.map((e) => [e.event.data.id, e]));
    expect(new Set(events.map((e) => e.req.headers["webhook-id"])).size).toBe(3);

    const completed = byJob.get(done)!;
    expect(completed.req.headers["content-type"]).toBe("application/json");
    expect(completed.req.headers["webhook-id"]).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(Math.abs(Number(completed.req.headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(30);
    expect(completed.event).toMatchObject({
      type: "video.generation.completed",
      data: {
        id: done, object: "video.generation", status: "completed", model: "fast", seconds: 1, size: "480x832",
        urls: { poll: `${s.url}/v1/videos/generations/${done}`, content: `${s.url}/v1/videos/generations/${done}/content`, events: `${s.url}/v1/videos/generations/${done}/events` },
      },
    });
    expect(Date.parse(completed.event.timestamp)).toBeGreaterThan(Date.now() - 60_000);
    expect(completed.event.data.expires_at).toBeGreaterThan(Date.now() / 1000);
    expect(completed.event.data.data).toBeUndefined(); // no b64_json in webhooks
    expect(completed.req.body).not.toContain("b64_json");

    expect(byJob.get(failed)!.event).toMatchObject({ type: "video.generation.failed", data: { status: "failed", error: { code: "nsfw_rejected" } } });
    expect(byJob.get(failed)!.event.data.urls.content).toBeUndefined();
    expect(byJob.get(cancelled)!.event).toMatchObject({ type: "video.generation.cancelled", data: { status: "failed", error: { code: "cancelled" } } });

    // a forged signature or another secret does not verify
    expect(() => verified("whsec_" + Buffer.alloc(32, 7).toString("base64"), completed.req)).toThrow();
    expect(() => verified(secret, { ...completed.req, body: completed.req.body.replace("completed", "failed") })).toThrow();

    // the delivery log: one delivered row per event
    const log = await a.call("GET", `/v1/webhooks/${ep.body.id}/deliveries`);
    expect(log.status).toBe(200);
    expect(log.body.data).toHaveLength(3);
    for (const d of log.body.data) expect(d).toMatchObject({ object: "webhook_delivery", endpoint_id: ep.body.id, status: "delivered", attempts: 1, last_status: 200, last_error: null, next_attempt_at: null });
    expect(log.body.data.map((d: any) => d.id).sort()).toEqual(events.map((e) => e.req.headers["webhook-id"]).sort());
  }, 30_000);

  test("an endpoint subscribed to some events gets only those", async () => {
    const r = receiver();
    const a = api((await s.newClient()).key);
    const ep = await a.createEndpoint({ url: `${r.url}/only-failed`, events: ["video.generation.failed"] });
    expect(ep.body.events).toEqual(["video.generation.failed"]);
    await a.waitFinal(await submit(a, { model: "fast" }));
    const failed = await submit(a, { model: "broken" });
    await a.waitFinal(failed);
    await r.waitFor((x) => x.length >= 1);
    await Bun.sleep(400);
    expect(r.requests.map((q) => verified(ep.body.secret, q).data.id)).toEqual([failed]);
  }, 20_000);

  test("`.processing` is opt-in: sent once when the provider accepts the job", async () => {
    const r = receiver();
    const a = api((await s.newClient()).key);
    const ep = await a.createEndpoint({ url: `${r.url}/progress`, events: ["video.generation.processing", "video.generation.completed"] });
    const job = await submit(a, { model: "fast" });
    await a.waitFinal(job);
    await r.waitFor((x) => x.length >= 2);
    await Bun.sleep(400);
    const events = r.requests.map((q) => verified(ep.body.secret, q));
    expect(events.map((e) => e.type).sort()).toEqual(["video.generation.completed", "video.generation.processing"]);
    const processing = events.find((e) => e.type === "video.generation.processing");
    expect(processing.data).toMatchObject({ id: job, status: "processing" });
    expect(processing.data.urls.content).toBeUndefined();
  }, 20_000);

  test("the secret is shown once and is not stored in the clear", async () => {
    const r = receiver();
    const c = await s.newClient();
    const a = api(c.key);
    const ep = await a.createEndpoint({ url: `${r.url}/x` });
    const list = await a.call("GET", "/v1/webhooks");
    expect(list.body.data).toHaveLength(1);
    expect(list.body.data[0].secret).toBeUndefined();
    expect((await a.call("GET", `/v1/webhooks/${ep.body.id}`)).body.secret).toBeUndefined();
    const db = postgres(s.databaseUrl!, { max: 1, onnotice: () => {} });
    try {
      const [row] = await db`SELECT secret_ciphertext FROM webhook_endpoints WHERE id = ${ep.body.id}`;
      const raw = ep.body.secret.slice("whsec_".length);
      expect(row!.secret_ciphertext).not.toContain(raw);
      expect(row!.secret_ciphertext).not.toContain(Buffer.from(raw, "base64").toString("hex"));
      expect(row!.secret_ciphertext).toMatch(/^v1\.[0-9a-f]{8}\./);
    } finally {
      await db.end();
    }
  });
});

describe("retries, 410 and replays", () => {
  test("receiver failing the first 3 attempts → delivered on the 4th with the same webhook-id", async () => {
    const r = receiver();
    r.script([503, 500, 502]);
    const a = api((await s.newClient()).key);
    const ep = await a.createEndpoint({ url: `${r.url}/flaky` });
    const job = await submit(a, { model: "fast" });
    await r.waitFor((x) => x.some((q) => q.answered === 200), 20_000);
    expect(r.requests.map((q) => q.answered)).toEqual([503, 500, 502, 200]);
    const ids = new Set(r.requests.map((q) => q.headers["webhook-id"]));
    expect(ids.size).toBe(1);
    // every attempt is signed afresh (its own timestamp) and verifies; the body is the same bytes
    for (const q of r.requests) expect(verified(ep.body.secret, q).data.id).toBe(job);
    expect(new Set(r.requests.map((q) => q.body)).size).toBe(1);
    // backoff: each wait at least half the doubled base (150, 300, 600 ms → ≥ 75, 150, 300)
    const gaps = r.requests.slice(1).map((q, i) => q.at - r.requests[i]!.at);
    expect(gaps[0]!).toBeGreaterThanOrEqual(70);
    expect(gaps[1]!).toBeGreaterThanOrEqual(145);
    expect(gaps[2]!).toBeGreaterThanOrEqual(295);
    const log = await until(() => a.call("GET", `/v1/webhooks/${ep.body.id}/deliveries`), (l) => l.body.data[0]?.status === "delivered");
    expect(log.body.data).toHaveLength(1);
    expect(log.body.data[0]).toMatchObject({ id: [...ids][0], status: "delivered", attempts: 4, last_status: 200, job_id: job });
  }, 30_000);

  test("a failed attempt is visible in the log with its status and next attempt", async () => {
    const r = receiver();
    r.script([], 500);
    const a = api((await s.newClient()).key);
    const ep = await a.createEndpoint({ url: `${r.url}/down` });
    const job = await submit(a, { model: "fast" });
    await r.waitFor((x) => x.length >= 2);
    const log = await a.call("GET", `/v1/webhooks/${ep.body.id}/deliveries?job_id=${job}`);
    expect(log.body.data[0]).toMatchObject({ status: "pending", last_status: 500, last_error: "the receiver answered HTTP 500" });
    expect(log.body.data[0].attempts).toBeGreaterThanOrEqual(2);
    expect(typeof log.body.data[0].next_attempt_at).toBe("number");
    await a.call("DELETE", `/v1/webhooks/${ep.body.id}`);
  }, 20_000);

  test("410 Gone disables the endpoint; nothing more is sent until it is enabled again", async () => {
    const r = receiver();
    r.script([410]);
    const a = api((await s.newClient()).key);
    const ep = await a.createEndpoint({ url: `${r.url}/gone` });
    await a.waitFinal(await submit(a, { model: "fast" }));
    await r.waitFor((x) => x.length === 1);
    let view: any;
    for (let i = 0; i < 50; i++) {
      view = (await a.call("GET", `/v1/webhooks/${ep.body.id}`)).body;
      if (!view.enabled) break;
      await Bun.sleep(50);
    }
    expect(view).toMatchObject({ enabled: false, disabled_reason: "the receiver answered 410 Gone" });
    const [gone] = (await a.call("GET", `/v1/webhooks/${ep.body.id}/deliveries`)).body.data;
    expect(gone).toMatchObject({ status: "failed", attempts: 1, last_status: 410 });

    await a.waitFinal(await submit(a, { model: "fast" }));
    await Bun.sleep(500);
    expect(r.requests).toHaveLength(1);
    expect((await a.call("GET", `/v1/webhooks/${ep.body.id}/deliveries`)).body.data).toHaveLength(1);

    const enabled = await a.call("PATCH", `/v1/webhooks/${ep.body.id}`, { enabled: true });
    expect(enabled.body).toMatchObject({ enabled: true, disabled_reason: null });
    const third = await submit(a, { model: "fast" });
    await r.waitFor((x) => x.length === 2);
    expect(verified(ep.body.secret, r.requests[1]!).data.id).toBe(third);
  }, 30_000);

  test("replay sends the same webhook-id and body again", async () => {
    const r = receiver();
    const a = api((await s.newClient()).key);
    const ep = await a.createEndpoint({ url: `${r.url}/replay` });
    const job = await submit(a, { model: "fast" });
    await r.waitFor((x) => x.length === 1);
    const [d] = (await a.deliveries(`?job_id=${job}`)).body.data;
    await Bun.sleep(200);
    const replay = await a.call("POST", `/v1/webhooks/deliveries/${d.id}/replay`);
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ id: d.id, status: "pending" });
    await r.waitFor((x) => x.length === 2);
    expect(r.requests[1]!.headers["webhook-id"]).toBe(d.id);
    expect(r.requests[1]!.body).toBe(r.requests[0]!.body);
    expect(verified(ep.body.secret, r.requests[1]!).data.id).toBe(job);
  }, 20_000);
});

describe("a job's own webhook_url", () => {
  test("signed with the account secret; refused before the secret exists", async () => {
    const r = receiver();
    const a = api((await s.newClient()).key);
    const before = await a.submit({ model: "fast", prompt: "p", image: IMG, webhook_url: `${r.url}/job` });
    expect(before.status).toBe(400);
    expect(((await before.json()) as any).error).toMatchObject({ code: "webhook_secret_missing", param: "webhook_url" });

    const sec = await a.call("POST", "/v1/webhooks/secret");
    expect(sec.status).toBe(200);
    expect(sec.body.secret).toMatch(/^whsec_/);
    const job = await submit(a, { model: "fast", webhook_url: `${r.url}/job` });
    await r.waitFor((x) => x.length === 1);
    const event = verified(sec.body.secret, r.requests[0]!);
    expect(event).toMatchObject({ type: "video.generation.completed", data: { id: job, status: "completed" } });
    const [d] = (await until(() => a.deliveries(`?job_id=${job}`), (l) => l.body.data[0]?.status === "delivered")).body.data;
    expect(d).toMatchObject({ endpoint_id: null, url: `${r.url}/job`, status: "delivered" });

    // a new secret signs from then on; the old one no longer verifies
    const rotated = await a.call("POST", "/v1/webhooks/secret");
    const second = await submit(a, { model: "broken", webhook_url: `${r.url}/job` });
    await r.waitFor((x) => x.length === 2);
    expect(verified(rotated.body.secret, r.requests[1]!).data.id).toBe(second);
    expect(() => verified(sec.body.secret, r.requests[1]!)).toThrow();
  }, 20_000);
});

describe("SSRF guard", () => {
  const blocked = ["http://169.254.169.254/latest/meta-data", "http://10.0.0.7/hook", "http://[::1]:8080/hook", "http://metadata.google.internal/x", "http://0x7f000001.nip.io.invalid/x"];

  test("private, link-local and metadata URLs are refused at registration and at submit", async () => {
    const a = api((await s.newClient()).key);
    await a.call("POST", "/v1/webhooks/secret");
    for (const url of blocked.slice(0, 4)) {
      const reg = await a.createEndpoint({ url });
      expect(reg.status).toBe(400);
      expect(reg.body.error).toMatchObject({ code: "invalid_webhook_url", param: "url", type: "invalid_request_error" });
      const sub = await a.submit({ model: "fast", prompt: "p", image: IMG, webhook_url: url });
      expect(sub.status).toBe(400);
      expect(((await sub.json()) as any).error).toMatchObject({ code: "invalid_webhook_url", param: "webhook_url" });
    }
    for (const url of ["ftp://example.com/x", "https://user:pw@example.com/x", "not a url", "https://example.com/#frag"]) {
      const reg = await a.createEndpoint({ url });
      expect(reg.status).toBe(400);
      expect(reg.body.error.code).toBe("invalid_webhook_url");
    }
    expect((await a.call("GET", "/v1/webhooks")).body.data).toHaveLength(0);
    expect((await a.list()).status).toBe(200);
    expect(((await (await a.list()).json()) as any).data).toHaveLength(0);
  }, 30_000);

  test("without REELAY_WEBHOOK_ALLOW_NETWORKS, loopback is refused too", async () => {
    const strict = await startTestServer({ ...MODELS, REELAY_SECRET_KEY: SECRET_KEY });
    try {
      const c = await strict.newClient();
      const h = { authorization: `Bearer ${c.key}`, "content-type": "application/json" };
      const r = receiver();
      const reg = await fetch(`${strict.url}/v1/webhooks`, { method: "POST", headers: h, body: JSON.stringify({ url: `${r.url}/x` }) });
      expect(reg.status).toBe(400);
      expect(((await reg.json()) as any).error.message).toContain("127.0.0.1");
      for (const url of [`http://localhost:${r.port}/x`, `http://localhost.localdomain/x`]) {
        expect((await fetch(`${strict.url}/v1/webhooks`, { method: "POST", headers: h, body: JSON.stringify({ url }) })).status).toBe(400);
      }
      await fetch(`${strict.url}/v1/webhooks/secret`, { method: "POST", headers: h });
      const sub = await fetch(`${strict.url}/v1/videos/generations`, { method: "POST", headers: h, body: JSON.stringify({ model: "fast", prompt: "p", image: IMG, webhook_url: `${r.url}/x` }) });
      expect(sub.status).toBe(400);
      expect(((await sub.json()) as any).error.param).toBe("webhook_url");
    } finally {
      await strict.close();
    }
  }, 30_000);
});

describe("visibility and validation", () => {
  test("another account's endpoints and deliveries do not exist for you", async () => {
    const r = receiver();
    const owner = api((await s.newClient()).key);
    const other = api((await s.newClient()).key);
    const ep = await owner.createEndpoint({ url: `${r.url}/mine` });
    const job = await submit(owner, { model: "fast" });
    await r.waitFor((x) => x.length === 1);
    const [d] = (await owner.deliveries()).body.data;
    for (const [method, path] of [["GET", `/v1/webhooks/${ep.body.id}`], ["PATCH", `/v1/webhooks/${ep.body.id}`], ["DELETE", `/v1/webhooks/${ep.body.id}`], ["GET", `/v1/webhooks/${ep.body.id}/deliveries`], ["POST", `/v1/webhooks/deliveries/${d.id}/replay`]] as const) {
      const res = await other.call(method, path, method === "PATCH" ? { enabled: false } : undefined);
      expect(res.status).toBe(404);
      expect(res.body.error.type).toBe("not_found_error");
    }
    expect((await other.deliveries(`?job_id=${job}`)).body.data).toHaveLength(0);
    expect((await other.call("GET", "/v1/webhooks")).body.data).toHaveLength(0);
    // still the owner's, untouched
    expect((await owner.call("GET", `/v1/webhooks/${ep.body.id}`)).body.enabled).toBe(true);
  }, 20_000);

  test("bad input gets the error envelope; delete removes the endpoint and its log", async () => {
    const r = receiver();
    const a = api((await s.newClient()).key);
    for (const body of [{}, { url: 5 }, { url: `${r.url}/x`, events: [] }, { url: `${r.url}/x`, events: ["video.generation.exploded"] }, { url: `${r.url}/x`, events: "video.generation.completed" }]) {
      const res = await a.createEndpoint(body);
      expect(res.status).toBe(400);
      expect(res.body.error.type).toBe("invalid_request_error");
    }
    const ep = await a.createEndpoint({ url: `${r.url}/del` });
    const del = await a.call("DELETE", `/v1/webhooks/${ep.body.id}`);
    expect(del.body).toEqual({ id: ep.body.id, object: "webhook_endpoint", deleted: true });
    expect((await a.call("GET", `/v1/webhooks/${ep.body.id}`)).status).toBe(404);
    expect((await a.call("DELETE", `/v1/webhooks/${ep.body.id}`)).status).toBe(404);
    await a.waitFinal(await submit(a, { model: "fast" }));
    await Bun.sleep(300);
    expect(r.requests).toHaveLength(0);
  }, 20_000);

  test("a key without the video scope cannot manage webhooks", async () => {
    const c = await s.newClient({ scopes: ["chat"] });
    const res = await fetch(`${s.url}/v1/webhooks`, { headers: { authorization: `Bearer ${c.key}` } });
    expect(res.status).toBe(403);
    expect(((await res.json()) as any).error.code).toBe("insufficient_scope");
  });
});
