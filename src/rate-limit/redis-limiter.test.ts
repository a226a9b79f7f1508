import { afterAll, describe, expect, test } from "bun:test";
import Redis from "ioredis";
import { runLimiterContract } from "./limiter-contract.ts";
import { createRedisLimiter } from "./redis-limiter.ts";
import type { LimiterLogger, RateLimiter } from "./types.ts";
import { freePort } from "../../test/support/harness.ts";
import { startThrowawayRedis, type ThrowawayRedis } from "../../test/support/throwaway-redis.ts";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const prefix = `reelay-test:${crypto.randomUUID().slice(0, 8)}:`;

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 5000) {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error("condition not met in time");
    await Bun.sleep(20);
  }
}

async function connected(limiter: RateLimiter) {
  await waitFor(() => !limiter.health().degraded);
  return limiter;
}

function recordingLogger() {
  const lines: { level: "error" | "info"; msg: string }[] = [];
  const logger: LimiterLogger = {
    error: (msg) => lines.push({ level: "error", msg }),
    info: (msg) => lines.push({ level: "info", msg }),
  };
  return { logger, lines };
}

const inspect = new Redis(REDIS_URL);
afterAll(async () => {
  const keys = await inspect.keys(`${prefix}*`);
  if (keys.length) await inspect.del(...keys);
  inspect.disconnect();
});

runLimiterContract("redis", () => connected(createRedisLimiter(REDIS_URL, { prefix, logger: recordingLogger().logger })));

describe("redis limiter", () => {
  test("two instances (two connections) share one limit", async () => {
    const a = await connected(createRedisLimiter(REDIS_URL, { prefix }));
    const b = await connected(createRedisLimiter(REDIS_URL, { prefix }));
    try {
      for (let i = 0; i < 5; i++) expect((await a.consume("shared", 1, 10, 60_000)).allowed).toBe(true);
      for (let i = 0; i < 5; i++) expect((await b.consume("shared", 1, 10, 60_000)).allowed).toBe(true);
      expect((await a.consume("shared", 1, 10, 60_000)).allowed).toBe(false);
      expect((await b.consume("shared", 1, 10, 60_000)).allowed).toBe(false);
      const slot = await a.acquireSlot("shared-slot", 1, 60_000);
      expect(await b.acquireSlot("shared-slot", 1, 60_000)).toBeNull();
      await b.releaseSlot("shared-slot", slot!);
      expect(await b.acquireSlot("shared-slot", 1, 60_000)).toBeString();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  test("concurrent callers on two instances never exceed the limit", async () => {
    // a healthy Redis is what this proves exact: with the default 100 ms command timeout, a CPU-starved
    // CI box once made one of 200 commands time out, and that caller was answered by the in-process
    // fallback (by design, tested below) — 51 allowed. A generous timeout keeps the test about the race.
    const a = await connected(createRedisLimiter(REDIS_URL, { prefix, commandTimeoutMs: 10_000 }));
    const b = await connected(createRedisLimiter(REDIS_URL, { prefix, commandTimeoutMs: 10_000 }));
    try {
      const results = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 ? a : b).consume("race", 1, 50, 60_000)));
      expect(results.filter((r) => r.allowed).length).toBe(50);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  test("keys carry the prefix and expire when idle", async () => {
    const l = await connected(createRedisLimiter(REDIS_URL, { prefix }));
    await l.consume("ttl-check", 1, 10, 60_000);
    const ttl = await inspect.pttl(`${prefix}rate:ttl-check`);
    expect(ttl).toBeGreaterThan(5_000);
    expect(ttl).toBeLessThanOrEqual(6_000);
    await l.close();
  });

  test("nothing listening: answers from the fallback, degraded, logged once", async () => {
    const { logger, lines } = recordingLogger();
    const l = createRedisLimiter(`redis://127.0.0.1:${freePort()}`, { prefix, logger });
    try {
      for (let i = 0; i < 3; i++) expect(await l.consume("down", 1, 2, 60_000)).toMatchObject({ allowed: i < 2 });
      expect(await l.acquireSlot("down", 1, 60_000)).toStartWith("mem:");
      expect(l.health()).toEqual({ backend: "redis", degraded: true });
      expect(lines.filter((x) => x.level === "error").length).toBe(1);
    } finally {
      await l.close();
    }
  });
});

describe("redis limiter outage and recovery (a redis-server of our own on a free port)", () => {
  let redis: ThrowawayRedis;
  let port = 0;
  const start = async () => {
    if (!redis) {
      redis = await startThrowawayRedis();
      port = redis.port;
    } else await redis.start();
  };
  const stop = () => redis?.stop();
  afterAll(stop);

  test("fails open while Redis is down, returns to Redis when it is back", async () => {
    await start();
    const { logger, lines } = recordingLogger();
    const l = await connected(createRedisLimiter(`redis://127.0.0.1:${port}`, { prefix, logger }));
    const direct = new Redis({ port, maxRetriesPerRequest: 0, retryStrategy: () => 100, enableOfflineQueue: false });
    direct.on("error", () => {});
    await waitFor(() => direct.status === "ready");
    try {
      expect((await l.consume("k", 1, 5, 60_000)).remaining).toBe(4);
      expect(await direct.exists(`${prefix}rate:k`)).toBe(1);
      const redisSlot = await l.acquireSlot("job", 1, 60_000);

      await stop();
      const during = await l.consume("k", 1, 5, 60_000);
      expect(during.allowed).toBe(true);
      expect(during.remaining).toBe(4); // fresh per-instance state in the fallback
      await l.consume("k", 1, 5, 60_000);
      expect(l.health()).toEqual({ backend: "redis", degraded: true });
      const localSlot = await l.acquireSlot("job", 1, 60_000);
      expect(localSlot).toStartWith("mem:");
      await l.releaseSlot("job", redisSlot!); // lost to the outage: harmless, TTL frees it
      await l.releaseSlot("job", localSlot!);
      expect(lines.map((x) => x.level)).toEqual(["error"]);

      await start(); // empty Redis: the Lua scripts must be loaded again (EVALSHA → NOSCRIPT → EVAL)
      await waitFor(() => !l.health().degraded);
      expect(await l.consume("k", 1, 5, 60_000)).toMatchObject({ allowed: true, remaining: 4 });
      await waitFor(async () => (await direct.exists(`${prefix}rate:k`).catch(() => 0)) === 1);
      expect(await l.acquireSlot("job", 1, 60_000)).not.toStartWith("mem:");
      expect(lines.map((x) => x.level)).toEqual(["error", "info"]);
    } finally {
      direct.disconnect();
      await l.close();
    }
  }, 20_000);

  test("a hung Redis costs one command timeout, then the fallback answers until it responds again", async () => {
    if (redis?.pid() == null) await start();
    const { logger, lines } = recordingLogger();
    const l = await connected(createRedisLimiter(`redis://127.0.0.1:${port}`, { prefix: `${prefix}hung:`, logger, commandTimeoutMs: 100 }));
    const direct = new Redis({ port });
    try {
      await direct.call("CLIENT", "PAUSE", "700", "ALL");
      const started = performance.now();
      expect((await l.consume("h", 1, 5, 60_000)).allowed).toBe(true);
      expect(performance.now() - started).toBeLessThan(300);
      expect(l.health().degraded).toBe(true);
      const fast = performance.now();
      await l.consume("h", 1, 5, 60_000);
      expect(performance.now() - fast).toBeLessThan(20); // skipped, not another timeout
      await waitFor(async () => !l.health().degraded && (await l.consume("h", 0, 5, 60_000)) !== undefined);
      await waitFor(async () => lines.length === 2);
      expect(lines.map((x) => x.level)).toEqual(["error", "info"]);
    } finally {
      direct.disconnect();
      await l.close();
    }
  }, 10_000);
});
