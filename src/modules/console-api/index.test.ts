/**
 * The console's read routes against the real server on a fresh Postgres database: time series (raw
 * and rolled-up paths agree, late rows are counted, bad input is a 400 envelope, clients see only
 * their own account), video jobs across accounts (filters, result, cancel), models, stats, keys.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { query } from "../../db/index.ts";
import { startTestServer, type TestServer } from "../../../test/support/harness.ts";
import { client, pngBase64, scriptedEnv } from "../../../test/videos/support.ts";
import { refreshRollups } from "./rollups.ts";

let s: TestServer;
const HOUR = 3_600_000;
const base = Math.floor(Date.now() / HOUR) * HOUR - 10 * HOUR; // a whole hour, 10 h ago

beforeAll(async () => {
  s = await startTestServer(scriptedEnv([{ id: "slow-video", options: { durationMs: 60_000 } }, { id: "bad-video", options: { fail: { code: "gpu_oom", message: "out of memory" } } }], true));
}, 60_000);
afterAll(() => s?.close());

const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as any });
const db = () => s.deps.database.db;

/** usage rows straight into the table at chosen times (what the billing module writes, minus the money). */
async function usageAt(accountId: string, rows: Array<{ at: number; model: string; cost: number; latency: number; status?: number; pt?: number; ct?: number }>) {
  for (const r of rows) {
    await query(db(), sql`INSERT INTO usage_records (account_id, ref, kind, model, prompt_tokens, completion_tokens, cost, status, latency_ms, created_at)
      VALUES (${accountId}, ${"req_" + Math.random().toString(36).slice(2)}, 'chat', ${r.model}, ${r.pt ?? 10}, ${r.ct ?? 5}, ${r.cost}, ${r.status ?? 200}, ${r.latency}, ${new Date(r.at).toISOString()})`);
  }
}

describe("GET /admin/usage/timeseries", () => {
  let acctA: string;
  let acctB: string;
  let keyA: string;
  beforeAll(async () => {
    ({ accountId: acctA, key: keyA } = await s.newClient());
    ({ accountId: acctB } = await s.newClient());
    await usageAt(acctA, [
      { at: base + 60_000, model: "m1", cost: 100, latency: 100 },
      { at: base + 120_000, model: "m1", cost: 200, latency: 300, status: 502 },
      { at: base + HOUR + 5_000, model: "m2", cost: 1_000_001, latency: 50, pt: 7, ct: 0 },
    ]);
    await usageAt(acctB, [{ at: base + 30 * 60_000, model: "m1", cost: 40, latency: 1000 }]);
  });

  const q = (params: string) => s.admin(`/admin/usage/timeseries?${params}`);
  const range = `from=${new Date(base).toISOString()}&to=${new Date(base + 3 * HOUR).toISOString()}`;

  test("hourly buckets: totals, per model, error rate, percentiles; rollups give the same answer as raw rows", async () => {
    const before = await json(await q(`bucket=1h&${range}`));
    expect(before.status).toBe(200);
    const b = before.body;
    expect(b.object).toBe("usage.timeseries");
    expect(b.timestamps).toEqual([base / 1000, base / 1000 + 3600, base / 1000 + 7200]);
    expect(b.total.requests).toEqual([3, 1, 0]);
    expect(b.total.credits).toEqual([340, 1_000_001, 0]);
    expect(b.total.tokens).toEqual([45, 7, 0]);
    expect(b.total.errors).toEqual([1, 0, 0]);
    expect(b.total.error_rate).toEqual([0.3333, 0, null]);
    // log-histogram bins: 100 ms → 108, 300 → 304, 1000 → 1024 (upper bounds 2^(i/4))
    expect(b.total.latency_p50_ms).toEqual([304, 54, null]);
    expect(b.total.latency_p99_ms).toEqual([1024, 54, null]);
    expect(Object.keys(b.models).sort()).toEqual(["m1", "m2"]);
    expect(b.models.m2.credits).toEqual([0, 1_000_001, 0]);
    // the same query after everything was rolled up (the refresh ran in the first call; force it again)
    await refreshRollups(db());
    const [state] = await query<{ rolled_until: string }>(db(), sql`SELECT rolled_until FROM usage_rollup_state WHERE id = 1`);
    expect(new Date(state!.rolled_until).getTime()).toBeGreaterThan(base + 3 * HOUR);
    const after = await json(await q(`bucket=1h&${range}`));
    expect(after.body).toEqual(b);
  });

  test("a late row (older created_at, written after the refresh) is counted at once and rolled up next time", async () => {
    await refreshRollups(db());
    await usageAt(acctB, [{ at: base + 2 * HOUR + 60_000, model: "m1", cost: 5, latency: 10 }]);
    const r = await json(await q(`bucket=1h&${range}`));
    expect(r.body.total.requests).toEqual([3, 1, 1]);
    await refreshRollups(db());
    const [{ n }] = (await query<{ n: string }>(db(), sql`SELECT sum(requests) AS n FROM usage_rollups WHERE bucket_start >= ${new Date(base + 2 * HOUR).toISOString()} AND bucket_start < ${new Date(base + 3 * HOUR).toISOString()}`)) as any;
    expect(Number(n)).toBe(1);
    expect((await json(await q(`bucket=1h&${range}`))).body.total.requests).toEqual([3, 1, 1]);
  });

  test("filters by model and by account; 1-minute buckets; unaligned ranges widen to whole buckets", async () => {
    const m2 = await json(await q(`bucket=1h&${range}&model=m2`));
    expect(m2.body.total.requests).toEqual([0, 1, 0]);
    const a = await json(await q(`bucket=1h&${range}&account=${acctB}`));
    expect(a.body.total.requests).toEqual([1, 0, 1]);
    const min = await json(await q(`bucket=1m&from=${new Date(base + 30_000).toISOString()}&to=${new Date(base + 150_000).toISOString()}`));
    expect(min.body.timestamps).toEqual([0, 1, 2].map((i) => (base + i * 60_000) / 1000));
    expect(min.body.total.requests).toEqual([0, 1, 1]);
  });

  test("a client key sees its own account's series only, and cannot call the admin route", async () => {
    const own = await json(await fetch(`${s.url}/v1/usage/timeseries?bucket=1h&${range}`, { headers: { authorization: `Bearer ${keyA}` } }));
    expect(own.status).toBe(200);
    expect(own.body.total.requests).toEqual([2, 1, 0]);
    const admin = await fetch(`${s.url}/admin/usage/timeseries?${range}`, { headers: { authorization: `Bearer ${keyA}` } });
    expect(admin.status).toBe(403);
  });

  test.each([
    ["bucket=2h", "bucket"],
    ["bucket=1m&from=2020-01-01&to=2020-03-01", "bucket"],
    ["from=yesterday", "from"],
    ["from=2026-01-02&to=2026-01-01", "from"],
  ])("%s → 400 envelope naming %s", async (params, param) => {
    const r = await json(await q(params));
    expect(r.status).toBe(400);
    expect(r.body.error.type).toBe("invalid_request_error");
    expect(r.body.error.param ?? r.body.error.message).toContain(param);
  });

  test("the default is the last 24 hours in hourly buckets", async () => {
    const r = await json(await q(""));
    expect(r.body.bucket).toBe("1h");
    expect(r.body.timestamps.length).toBeGreaterThanOrEqual(24);
    expect(r.body.timestamps.length).toBeLessThanOrEqual(25);
  });

  test("no token → 401", async () => {
    const r = await json(await fetch(`${s.url}/admin/usage/timeseries`));
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe("invalid_api_key");
  });
});

describe("video jobs, models, stats and keys for operators", () => {
  let c1: Awaited<ReturnType<TestServer["newClient"]>>;
  let c2: Awaited<ReturnType<TestServer["newClient"]>>;
  const img = `data:image/png;base64,${pngBase64()}`;
  let slowId: string;
  let doneId: string;
  let failedId: string;

  beforeAll(async () => {
    c1 = await s.newClient();
    c2 = await s.newClient();
    slowId = (await (await client(s.url, c1.key).submit({ model: "slow-video", prompt: "wait", image: img, seconds: 1 })).json() as any).id;
    doneId = (await (await client(s.url, c2.key).submit({ model: "preview-motion", prompt: "zoom", image: img, seconds: 1 })).json() as any).id;
    failedId = (await (await client(s.url, c2.key).submit({ model: "bad-video", prompt: "x", image: img, seconds: 1 })).json() as any).id;
    await client(s.url, c2.key).waitFinal(doneId, 60_000);
    await client(s.url, c2.key).waitFinal(failedId);
  }, 90_000);

  test("list across accounts with filters; a failed job carries its error", async () => {
    const all = await json(await s.admin("/admin/videos?limit=200"));
    const ids = all.body.data.map((j: any) => j.id);
    expect(ids).toEqual(expect.arrayContaining([slowId, doneId, failedId]));
    const byAccount = await json(await s.admin(`/admin/videos?account=${c2.accountId}`));
    expect(byAccount.body.data.map((j: any) => j.id).sort()).toEqual([doneId, failedId].sort());
    const failed = await json(await s.admin(`/admin/videos?status=failed&account=${c2.accountId}`));
    expect(failed.body.data).toHaveLength(1);
    expect(failed.body.data[0].error).toEqual({ code: "gpu_oom", message: "out of memory" });
    const byModel = await json(await s.admin(`/admin/videos?model=preview-motion&account=${c2.accountId}`));
    expect(byModel.body.data[0]).toMatchObject({ id: doneId, status: "completed", has_result: true, account_id: c2.accountId });
    const page = await json(await s.admin(`/admin/videos?account=${c2.accountId}&limit=1`));
    expect(page.body.has_more).toBe(true);
    const next = await json(await s.admin(`/admin/videos?account=${c2.accountId}&limit=1&after=${page.body.last_id}`));
    expect(next.body.data[0].id).not.toBe(page.body.data[0].id);
    const bad = await json(await s.admin("/admin/videos?status=done"));
    expect(bad.status).toBe(400);
  });

  test("a completed job's MP4 is returned to the operator; unknown id is 404", async () => {
    const r = await json(await s.admin(`/admin/videos/${doneId}`));
    expect(r.status).toBe(200);
    expect(r.body.account_id).toBe(c2.accountId);
    const mp4 = Buffer.from(r.body.data[0].b64_json, "base64");
    expect(mp4.subarray(4, 8).toString()).toBe("ftyp");
    expect((await s.admin("/admin/videos/vid_nope")).status).toBe(404);
  });

  test("stats count the running job and its open hold; the operator cancels it and the hold is released", async () => {
    const before = await json(await s.admin("/admin/stats"));
    expect(before.body.video_queue.queued + before.body.video_queue.processing).toBeGreaterThanOrEqual(1);
    expect(before.body.video_queue.oldest_job_age_seconds).toBeGreaterThanOrEqual(0);
    expect(before.body.holds.open).toBeGreaterThanOrEqual(1);
    const cancelled = await json(await s.admin(`/admin/videos/${slowId}/cancel`, { method: "POST" }));
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.error.code).toBe("cancelled");
    expect(await client(s.url, c1.key).account()).toMatchObject({ held: 0, balance: 10_000_000 });
    const again = await json(await s.admin(`/admin/videos/${doneId}/cancel`, { method: "POST" }));
    expect(again.status).toBe(409);
  });

  test("models: plugin, capabilities, prices and health from recent usage", async () => {
    const r = await json(await s.admin("/admin/models"));
    const byId = Object.fromEntries(r.body.data.map((m: any) => [m.id, m]));
    expect(byId["preview-motion"]).toMatchObject({ plugin: "preview-video", capabilities: ["video"], pricing: { per_second: 30_000 }, state: "ready" });
    expect(byId["bad-video"].health).toMatchObject({ requests: 1, errors: 1, error_rate: 1, last_error_code: "gpu_oom", status: "failing" });
    expect(byId["preview-motion"].health.status).toBe("healthy");
  });

  test("keys across accounts with last use; revoked keys only on request; accounts searchable", async () => {
    const r = await json(await s.admin(`/admin/keys?account=${c2.accountId}`));
    expect(r.body.data).toHaveLength(1);
    expect(r.body.data[0]).toMatchObject({ account_id: c2.accountId, account_name: "test", prefix: c2.key.slice(0, 11) });
    expect(r.body.data[0].last_used_at).not.toBeNull();
    expect(JSON.stringify(r.body)).not.toContain(c2.key);
    await s.admin(`/admin/keys/${c2.keyId}/revoke`, { method: "POST" });
    expect((await json(await s.admin(`/admin/keys?account=${c2.accountId}`))).body.data).toHaveLength(0);
    expect((await json(await s.admin(`/admin/keys?account=${c2.accountId}&include_revoked=true`))).body.data[0].revoked_at).not.toBeNull();
    await s.admin("/admin/accounts", { body: { name: "Needle_Corp 100%" } });
    const found = await json(await s.admin(`/admin/accounts?search=${encodeURIComponent("le_corp 100%")}`));
    expect(found.body.data.map((a: any) => a.name)).toEqual(["Needle_Corp 100%"]);
    const none = await json(await s.admin(`/admin/accounts?search=${encodeURIComponent("%")}`));
    expect(none.body.data.map((a: any) => a.name)).toEqual(["Needle_Corp 100%"]);
    const byId = await json(await s.admin(`/admin/accounts?search=${c1.accountId}`));
    expect(byId.body.data.map((a: any) => a.id)).toEqual([c1.accountId]);
  });
});
