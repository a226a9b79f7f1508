import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ApiError } from "../errors.ts";
import { createTestDatabase, dropDatabase, startTestServer, type TestServer } from "../../test/support/harness.ts";
import { formatDuration } from "./key-and-account-limits.ts";
import { startThrowawayRedis, type ThrowawayRedis } from "../../test/support/throwaway-redis.ts";
import { newClientOn, spawnServer, type ChildServer } from "../../test/support/child-server.ts";

const models = (url: string, key: string) => fetch(url + "/v1/models", { headers: { authorization: `Bearer ${key}` } });
const rl = (r: Response) => ({
  status: r.status,
  limit: r.headers.get("x-ratelimit-limit-requests"),
  remaining: r.headers.get("x-ratelimit-remaining-requests"),
  reset: r.headers.get("x-ratelimit-reset-requests"),
  retryAfter: r.headers.get("retry-after"),
});

/** "1h2m3.5s" / "20ms" → ms */
function parseDuration(s: string): number {
  const m = /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:([\d.]+)s)?(?:(\d+)ms)?$/.exec(s);
  if (!m || s === "") throw new Error(`not a duration: ${s}`);
  return Number(m[1] ?? 0) * 3_600_000 + Number(m[2] ?? 0) * 60_000 + Number(m[3] ?? 0) * 1000 + Number(m[4] ?? 0);
}

test("durations use OpenAI's format", () => {
  expect(formatDuration(0)).toBe("0ms");
  expect(formatDuration(20)).toBe("20ms");
  expect(formatDuration(1000)).toBe("1s");
  expect(formatDuration(6500)).toBe("6.5s");
  expect(formatDuration(360_000)).toBe("6m0s");
  expect(formatDuration(3_723_000)).toBe("1h2m3s");
  for (const ms of [20, 1000, 6500, 59_992, 360_000, 3_723_000]) expect(parseDuration(formatDuration(ms))).toBe(ms);
});

describe("request limits, in-process limiter", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.close());

  test("a key's RPM override: headers count down, then 429 with Retry-After in the envelope", async () => {
    const c = await s.newClient({ limits: { requests_per_minute: 5 } });
    const seen = [];
    for (let i = 0; i < 5; i++) seen.push(rl(await models(s.url, c.key)));
    // GCRA: 5 per minute = one unit every 12 s; after n requests the bucket is full again in n × 12 s
    expect(seen.map(({ reset, ...rest }) => rest)).toEqual([1, 2, 3, 4, 5].map((n) => ({ status: 200, limit: "5", remaining: String(5 - n), retryAfter: null })));
    // (+1 ms: the limiter rounds sub-millisecond remainders up)
    seen.forEach(({ reset }, i) => {
      expect(parseDuration(reset!)).toBeLessThanOrEqual((i + 1) * 12_000 + 1);
      expect(parseDuration(reset!)).toBeGreaterThan((i + 1) * 12_000 - 2_000);
    });

    const refused = await models(s.url, c.key);
    expect(refused.status).toBe(429);
    const h = rl(refused);
    expect(h.limit).toBe("5");
    expect(h.remaining).toBe("0");
    expect(Number(h.retryAfter)).toBeGreaterThanOrEqual(11);
    expect(Number(h.retryAfter)).toBeLessThanOrEqual(12);
    expect(parseDuration(h.reset!)).toBeGreaterThan(10_000);
    expect(parseDuration(h.reset!)).toBeLessThanOrEqual(12_001);
    const body = (await refused.json()) as { error: { type: string; code: string; message: string } };
    expect(body.error.type).toBe("rate_limit_error");
    expect(body.error.code).toBe("rate_limit_exceeded");
    expect(body.error.message).toContain(c.key.slice(0, 11));
    expect(body.error.message).not.toContain(c.key);
  });

  test("an account override caps all its keys together; headers report the tighter bucket", async () => {
    const acct = (await (await s.admin("/admin/accounts", { body: { name: "shared", credits: 1_000_000 } })).json()) as { id: string };
    expect((await s.admin(`/admin/accounts/${acct.id}/limits`, { method: "PATCH", body: { requests_per_minute: 3 } })).status).toBe(200);
    const keys = [];
    for (const name of ["a", "b"]) {
      const r = (await (await s.admin(`/admin/accounts/${acct.id}/keys`, { body: { name, requests_per_minute: 100 } })).json()) as { key: string };
      keys.push(r.key);
    }
    const statuses = [];
    for (let i = 0; i < 6; i++) {
      const r = await models(s.url, keys[i % 2]!);
      statuses.push(r.status);
      if (i === 0) expect(rl(r)).toMatchObject({ limit: "3", remaining: "2" });
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
  });

  test("the default applies without overrides; unauthenticated requests get 401, not 429, and no headers", async () => {
    const c = await s.newClient();
    const r = await models(s.url, c.key);
    expect(rl(r)).toMatchObject({ status: 200, limit: "600", remaining: "599" });
    const bad = await models(s.url, "rl-not-a-real-key-00000000000000000000");
    expect(bad.status).toBe(401);
    expect(bad.headers.get("x-ratelimit-limit-requests")).toBeNull();
  });

  test("token budget: x-ratelimit-*-tokens headers, 429 with Retry-After when a request would exceed TPM", async () => {
    const c = await s.newClient({ limits: { tokens_per_minute: 100 } });
    const principal = await s.deps.auth.authenticate(`Bearer ${c.key}`);
    expect(await s.deps.tokenBudget.consume(principal, 60)).toEqual({
      "x-ratelimit-limit-tokens": "100",
      "x-ratelimit-remaining-tokens": "40",
      "x-ratelimit-reset-tokens": "36s",
    });
    const err = await s.deps.tokenBudget.consume(principal, 60).then(() => null, (e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(429);
    expect(err.type).toBe("rate_limit_error");
    expect(err.headers["retry-after"]).toBe("12");
    expect(err.headers["x-ratelimit-remaining-tokens"]).toBe("40");
  });
});

describe("two reelay processes sharing one Redis", () => {
  let databaseUrl: string;
  const procs: ChildServer[] = [];
  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    const env = { DATABASE_URL: databaseUrl, REDIS_URL: "redis://127.0.0.1:6379" };
    procs.push(...(await Promise.all([spawnServer(env), spawnServer(env)])));
  }, 60_000);
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    await dropDatabase(databaseUrl);
  }, 30_000);

  test("30 requests alternating between the two: exactly 10 (the key's RPM) succeed", async () => {
    const [a, b] = procs as [ChildServer, ChildServer];
    for (const p of procs) expect(((await (await fetch(p.url + "/readyz")).json()) as { checks: unknown[] }).checks).toContainEqual({ name: "redis", ok: true, detail: "connected: limits shared across instances" });
    const c = await newClientOn(a, 10_000_000, { requests_per_minute: 10 });
    // one after another, so the two instances alternate deterministically (a burst would let the
    // faster instance take every unit, which proves nothing about sharing)
    const responses: Response[] = [];
    for (let i = 0; i < 30; i++) responses.push(await models((i % 2 ? b : a).url, c.key));
    const ok = responses.filter((r) => r.status === 200);
    const refused = responses.filter((r) => r.status === 429);
    expect(ok.length).toBe(10);
    expect(refused.length).toBe(20);
    // both instances served some of the 10 and refused some of the 20: the count is shared
    expect(new Set(ok.map((r) => r.url.split("/v1")[0])).size).toBe(2);
    expect(new Set(refused.map((r) => r.url.split("/v1")[0])).size).toBe(2);
    for (const r of refused) {
      expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(Number(r.headers.get("retry-after"))).toBeLessThanOrEqual(6);
      expect(rl(r)).toMatchObject({ limit: "10", remaining: "0" });
      expect(((await r.json()) as { error: { type: string } }).error.type).toBe("rate_limit_error");
    }
    const remaining = ok.map((r) => Number(r.headers.get("x-ratelimit-remaining-requests"))).sort((x, y) => x - y);
    expect(remaining).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  }, 30_000);
});

describe("Redis stops mid-test", () => {
  let redis: ThrowawayRedis;
  let s: TestServer;
  beforeAll(async () => {
    redis = await startThrowawayRedis();
    s = await startTestServer({ REDIS_URL: redis.url });
  }, 30_000);
  afterAll(async () => {
    await s.close();
    await redis.stop();
  });

  const readiness = async () => {
    const r = await fetch(s.url + "/readyz");
    const body = (await r.json()) as { status: string; checks: Array<{ name: string; degraded?: boolean; detail?: string }> };
    return { status: r.status, ready: body.status, redis: body.checks.find((c) => c.name === "redis") as Record<string, unknown> | undefined };
  };
  const degradedGauge = async () => {
    const text = await (await s.admin("/metrics")).text();
    return Number(/^reelay_rate_limiter_degraded\{backend="redis"\} (\d+)$/m.exec(text)?.[1]);
  };
  const waitFor = async (cond: () => Promise<boolean>, what: string) => {
    const deadline = Date.now() + 15_000;
    while (!(await cond())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await Bun.sleep(50);
    }
  };
  const burst = async (key: string, n: number) => {
    const out = [];
    for (let i = 0; i < n; i++) out.push((await models(s.url, key)).status);
    return out;
  };

  test("requests are still served (in-process limits), /readyz says degraded, then shared limits resume", async () => {
    await waitFor(async () => (await readiness()).redis?.degraded !== true, "the limiter to connect");
    const c = await s.newClient({ limits: { requests_per_minute: 4 } });
    expect(await burst(c.key, 5)).toEqual([200, 200, 200, 200, 429]);
    expect(await degradedGauge()).toBe(0);

    await redis.stop();
    // the in-process fallback knows nothing of what Redis counted: 4 more are served, then it limits too
    expect(await burst(c.key, 5)).toEqual([200, 200, 200, 200, 429]);
    const down = await readiness();
    expect(down.status).toBe(200);
    expect(down.ready).toBe("ready");
    expect(down.redis).toEqual({ name: "redis", ok: true, degraded: true, detail: "unreachable: using in-process limits" });
    expect(await degradedGauge()).toBe(1);

    await redis.start(); // an empty Redis: the shared count starts again
    await waitFor(async () => (await readiness()).redis?.degraded !== true, "the limiter to reconnect");
    expect(await degradedGauge()).toBe(0);
    expect(await burst(c.key, 5)).toEqual([200, 200, 200, 200, 429]);
  }, 40_000);
});
