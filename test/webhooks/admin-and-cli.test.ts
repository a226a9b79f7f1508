/**
 * Operators manage webhooks for their clients through the admin API and the CLI; the running
 * server delivers to endpoints the CLI created (they share the database and REELAY_SECRET_KEY).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { client, pngBase64, scriptedEnv } from "../videos/support.ts";
import { startReceiver, until, verified, type Receiver } from "./receiver.ts";

const IMG = pngBase64();
const SECRET_KEY = "admin-cli-secret-key-0123456789abcdefghi";
let s: TestServer;
let r: Receiver;

beforeAll(async () => {
  s = await startTestServer({
    ...scriptedEnv([{ id: "fast", options: { durationMs: 50 } }]),
    REELAY_SCHEDULER_POLL_MS: "50",
    REELAY_SECRET_KEY: SECRET_KEY,
    REELAY_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
    REELAY_WEBHOOK_POLL_MS: "100",
  });
  r = startReceiver();
});
afterAll(async () => {
  await r?.stop();
  await s?.close();
});

async function cli(...args: string[]) {
  const p = Bun.spawn(["bun", "src/main.ts", ...args], {
    cwd: import.meta.dir + "/../..",
    env: { ...process.env, DATABASE_URL: s.databaseUrl!, REELAY_SECRET_KEY: SECRET_KEY, REELAY_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8", REELAY_LOG_LEVEL: "error", REELAY_PLUGINS_DIR: "/nonexistent-reelay-plugins" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { out, err, code, json: () => JSON.parse(out) };
}

async function submit(key: string) {
  const res = await client(s.url, key).submit({ model: "fast", prompt: "p", image: IMG, seconds: 1 });
  return ((await res.json()) as any).id as string;
}

describe("admin API", () => {
  test("create for an account, list, inspect deliveries, replay, disable and delete", async () => {
    const c = await s.newClient();
    const created = await s.admin(`/admin/accounts/${c.accountId}/webhooks`, { body: { url: `${r.url}/admin`, events: ["video.generation.completed"] } });
    expect(created.status).toBe(201);
    const ep: any = await created.json();
    expect(ep.secret).toMatch(/^whsec_/);
    // the client sees the operator's endpoint as its own (without the secret)
    const seen: any = await (await fetch(`${s.url}/v1/webhooks`, { headers: { authorization: `Bearer ${c.key}` } })).json();
    expect(seen.data.map((e: any) => [e.id, e.secret])).toEqual([[ep.id, undefined]]);
    expect(((await (await s.admin(`/admin/accounts/${c.accountId}/webhooks`)).json()) as any).data).toHaveLength(1);

    const job = await submit(c.key);
    await r.waitFor((x) => x.some((q) => q.path === "/admin"));
    expect(verified(ep.secret, r.on("/admin")[0]!).data.id).toBe(job);
    const log: any = await until(async () => (await s.admin(`/admin/webhooks/${ep.id}/deliveries`)).json(), (l: any) => l.data[0]?.status === "delivered");
    expect(log.data).toHaveLength(1);
    expect(log.data[0]).toMatchObject({ job_id: job, status: "delivered", attempts: 1 });
    const all: any = await (await s.admin(`/admin/accounts/${c.accountId}/webhook-deliveries?job_id=${job}`)).json();
    expect(all.data.map((d: any) => d.id)).toEqual([log.data[0].id]);

    const replay = await s.admin(`/admin/webhook-deliveries/${log.data[0].id}/replay`, { method: "POST" });
    expect(replay.status).toBe(200);
    await r.waitFor((x) => x.filter((q) => q.path === "/admin").length === 2);
    expect(r.on("/admin")[1]!.headers["webhook-id"]).toBe(log.data[0].id);

    const disabled: any = await (await s.admin(`/admin/webhooks/${ep.id}`, { method: "PATCH", body: { enabled: false } })).json();
    expect(disabled).toMatchObject({ enabled: false, disabled_reason: "disabled by its owner" });
    expect((await s.admin(`/admin/webhooks/${ep.id}`, { method: "DELETE" })).status).toBe(200);
    expect((await s.admin(`/admin/webhooks/${ep.id}`)).status).toBe(404);
    expect((await s.admin(`/admin/accounts/acct_nope/webhooks`, { body: { url: `${r.url}/x` } })).status).toBe(404);
  }, 30_000);

  test("requires the admin token", async () => {
    const c = await s.newClient();
    const res = await fetch(`${s.url}/admin/accounts/${c.accountId}/webhooks`, { headers: { authorization: `Bearer ${c.key}` } });
    expect(res.status).toBe(403);
    expect((await fetch(`${s.url}/admin/accounts/${c.accountId}/webhooks`)).status).toBe(401);
  });
});

describe("CLI", () => {
  test("webhooks create / list / deliveries / replay / secret against the server's database", async () => {
    const c = await s.newClient();
    const made = await cli("webhooks", "create", "--account", c.accountId, "--url", `${r.url}/cli`, "--events", "video.generation.completed,video.generation.failed");
    expect(made.code).toBe(0);
    const ep = made.json();
    expect(ep).toMatchObject({ object: "webhook_endpoint", events: ["video.generation.completed", "video.generation.failed"], enabled: true });
    expect(ep.secret).toMatch(/^whsec_/);
    const listed = await cli("webhooks", "list", "--account", c.accountId);
    expect(listed.json().map((e: any) => [e.id, e.secret])).toEqual([[ep.id, undefined]]);

    // the server signs with the secret the CLI sealed
    const job = await submit(c.key);
    await r.waitFor((x) => x.some((q) => q.path === "/cli"));
    expect(verified(ep.secret, r.on("/cli")[0]!).data.id).toBe(job);
    await until(async () => (await s.admin(`/admin/webhooks/${ep.id}/deliveries`)).json(), (l: any) => l.data[0]?.status === "delivered");
    const log = (await cli("webhooks", "deliveries", "--endpoint", ep.id)).json();
    expect(log.data[0]).toMatchObject({ job_id: job, status: "delivered" });
    const replayed = await cli("webhooks", "replay", log.data[0].id);
    expect(replayed.json()).toMatchObject({ id: log.data[0].id, status: "pending" });
    await r.waitFor((x) => x.filter((q) => q.path === "/cli").length === 2, 10_000);

    const secret = (await cli("webhooks", "secret", "--account", c.accountId)).json();
    expect(secret.secret).toMatch(/^whsec_/);
    const withUrl = await client(s.url, c.key).submit({ model: "fast", prompt: "p", image: IMG, seconds: 1, webhook_url: `${r.url}/cli-job` });
    expect(withUrl.status).toBe(202);
    await r.waitFor((x) => x.some((q) => q.path === "/cli-job"));
    expect(verified(secret.secret, r.on("/cli-job")[0]!).type).toBe("video.generation.completed");
    expect((await cli("webhooks", "delete", ep.id)).code).toBe(0);
  }, 120_000);

  test("refuses an SSRF URL and bad arguments with a message", async () => {
    const c = await s.newClient();
    const ssrf = await cli("webhooks", "create", "--account", c.accountId, "--url", "http://169.254.169.254/latest");
    expect(ssrf.code).toBe(1);
    expect(ssrf.err).toContain("cannot receive webhooks");
    const bad = await cli("webhooks", "create", "--account", c.accountId, "--url", `${r.url}/x`, "--events", "video.generation.exploded");
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('unknown event "video.generation.exploded"');
    expect((await cli("webhooks", "deliveries")).err).toContain("exactly one of --endpoint and --account");
  }, 90_000);
});
