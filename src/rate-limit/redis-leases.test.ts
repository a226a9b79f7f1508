/**
 * The Redis limiter's leases (leases.ts): a busy key costs a Redis round trip per lease, not per
 * request, and the shared limit holds across instances within the documented tolerance. Runs on
 * a redis-server of its own, so the command counts it reads (INFO commandstats) are only ours.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import Redis from "ioredis";
import { startThrowawayRedis, type ThrowawayRedis } from "../../test/support/throwaway-redis.ts";
import { IDLE_GIVE_BACK_MS, leaseSize } from "./leases.ts";
import { createMemoryLimiter } from "./memory-limiter.ts";
import { createRedisLimiter } from "./redis-limiter.ts";
import type { RateLimiter } from "./types.ts";

/** a window so long that nothing refills during a test: counts are exact */
const FROZEN = 1e9;

let redis: ThrowawayRedis;
let inspect: Redis;
const opened: RateLimiter[] = [];
beforeAll(async () => {
  redis = await startThrowawayRedis();
  inspect = new Redis(redis.url);
});
afterAll(async () => {
  await Promise.all(opened.map((l) => l.close()));
  inspect.disconnect();
  await redis.stop();
});

async function limiter(prefix: string): Promise<RateLimiter> {
  // these tests prove what leases do with a healthy Redis: a command slower than the default
  // 100 ms timeout (a CPU-starved box) would be answered by the in-process fallback instead (a
  // three-instance burst once counted 1,331 of 1,000 that way); the fallback has its own tests
  const l = createRedisLimiter(redis.url, { prefix, commandTimeoutMs: 10_000 });
  opened.push(l);
  for (const until = Date.now() + 5000; l.health().degraded; await Bun.sleep(10)) if (Date.now() > until) throw new Error("limiter did not connect");
  return l;
}

/** Lua script executions Redis has run so far (every take and give-back is one) */
async function scriptCalls(): Promise<number> {
  const info = await inspect.info("commandstats");
  return [...info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

async function drain(l: RateLimiter, key: string, limit: number): Promise<number> {
  let n = 0;
  while ((await l.consume(key, 1, limit, FROZEN)).allowed) n++;
  return n;
}

test("a lease is 1% of the limit, at least one unit (limits below 200 stay one round trip per request)", () => {
  expect([1, 10, 199, 200, 600, 1_000_000].map(leaseSize)).toEqual([1, 1, 1, 2, 6, 10_000]);
});

test("2000 requests on one key: two Redis round trips (leases of 1000), and the headers match an in-process limiter's", async () => {
  const l = await limiter("busy:");
  const exact = createMemoryLimiter();
  const before = await scriptCalls();
  const seen: Array<[number, number]> = [];
  const want: Array<[number, number]> = [];
  for (let i = 0; i < 2000; i++) {
    const r = await l.consume("k", 1, 100_000, FROZEN);
    expect(r.allowed).toBe(true);
    seen.push([r.remaining, r.resetMs]);
    const m = await exact.consume("k", 1, 100_000, FROZEN);
    want.push([m.remaining, m.resetMs]);
  }
  expect(await scriptCalls() - before).toBe(2);
  expect(seen.map(([remaining]) => remaining)).toEqual(want.map(([remaining]) => remaining));
  // resets (10 s a unit here) agree within the delay between Redis reading its clock and this
  // process reading the reply: a round trip plus any event-loop stall (tens of ms on a busy machine)
  seen.forEach(([, reset], i) => expect(Math.abs(reset - want[i]![1])).toBeLessThanOrEqual(250));
  await exact.close();
});

test("three instances, one burst: never more than the limit; refused early by at most two leases, given back once idle", async () => {
  const limit = 1000;
  const ls = await Promise.all([1, 2, 3].map(() => limiter("burst:")));
  const results = await Promise.all(Array.from({ length: 1500 }, (_, i) => ls[i % 3]!.consume("k", 1, limit, FROZEN)));
  const allowed = results.filter((r) => r.allowed).length;
  expect(allowed).toBeLessThanOrEqual(limit);
  expect(allowed).toBeGreaterThanOrEqual(limit - 2 * (leaseSize(limit) - 1));
  for (const r of results.filter((x) => !x.allowed)) expect(r.resetMs).toBeGreaterThan(0);

  // what the three still hold goes back to Redis after IDLE_GIVE_BACK_MS: a fourth instance gets exactly the rest
  await Bun.sleep(IDLE_GIVE_BACK_MS * 1.6);
  expect(await drain(await limiter("burst:"), "k", limit)).toBe(limit - allowed);
});

test("close() gives unspent units back at once", async () => {
  const a = await limiter("close:");
  expect(await a.consume("k", 1, 1000, FROZEN)).toMatchObject({ allowed: true, remaining: 999 });
  const b = await limiter("close:");
  expect(await drain(b, "k", 1000)).toBe(1000 - leaseSize(1000)); // a holds the rest of its lease
  await a.close();
  expect(await drain(b, "k", 1000)).toBe(leaseSize(1000) - 1);
});

test("a cost larger than the lease takes what it needs in one round trip; a refusal counts nothing", async () => {
  const l = await limiter("tokens:");
  const before = await scriptCalls();
  expect(await l.consume("k", 700, 10_000, FROZEN)).toMatchObject({ allowed: true, remaining: 9300 });
  expect(await l.consume("k", 50, 10_000, FROZEN)).toMatchObject({ allowed: true, remaining: 9250 });
  expect(await scriptCalls() - before).toBe(1); // 700 taken with 99 spare: the 50 came from them
  expect(await l.consume("k", 9300, 10_000, FROZEN)).toMatchObject({ allowed: false, remaining: 9250 });
  expect(await l.consume("k", 20_000, 10_000, FROZEN)).toMatchObject({ allowed: false, remaining: 9250 });
  expect(await l.consume("k", 9250, 10_000, FROZEN)).toMatchObject({ allowed: true, remaining: 0 });
});
