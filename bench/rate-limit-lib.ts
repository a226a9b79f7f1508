/**
 * consume() throughput and latency, memory vs Redis, 32 concurrent callers.
 *   bun bench/rate-limit-lib.ts [seconds per row, default 3]   (REDIS_URL, default redis://127.0.0.1:6379)
 * "1 key": every caller hits one key (one hot API key); "10k keys": callers spread over 10,000 keys.
 */
import Redis from "ioredis";
import { createMemoryLimiter, type RateLimiter } from "../src/rate-limit/index.ts";
import { createRedisLimiter } from "../src/rate-limit/redis-limiter.ts";

const CALLERS = 32;
const seconds = Number(process.argv[2] ?? 3);
const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const prefix = `reelay-bench:${crypto.randomUUID().slice(0, 8)}:`;

async function measure(limiter: RateLimiter, keys: number) {
  const latencies: number[] = [];
  let refused = 0;
  const until = performance.now() + seconds * 1000;
  let n = 0;
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (performance.now() < until) {
        const key = `k${n++ % keys}`;
        const t0 = performance.now();
        const r = await limiter.consume(key, 1, 1_000_000, 60_000);
        latencies.push(performance.now() - t0);
        if (!r.allowed) refused++;
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))]!;
  return { ops: Math.round(latencies.length / seconds), p50: pct(0.5), p99: pct(0.99), refused };
}

async function waitConnected(limiter: RateLimiter) {
  const until = Date.now() + 5000;
  while (limiter.health().degraded) {
    if (Date.now() > until) throw new Error(`Redis at ${redisUrl} not reachable`);
    await Bun.sleep(20);
  }
}

const rows: Record<string, string | number>[] = [];
for (const keys of [1, 10_000]) {
  const memory = createMemoryLimiter();
  const m = await measure(memory, keys);
  await memory.close();
  rows.push({ backend: "memory", keys, "ops/s": m.ops, "p50 ms": m.p50.toFixed(3), "p99 ms": m.p99.toFixed(3) });

  // commandTimeout raised so a slow moment under load is measured, not hidden by the fallback
  const redis = createRedisLimiter(redisUrl, { prefix, commandTimeoutMs: 1000 });
  await waitConnected(redis);
  const r = await measure(redis, keys);
  const degraded = redis.health().degraded;
  await redis.close();
  rows.push({ backend: degraded ? "redis (DEGRADED)" : "redis", keys, "ops/s": r.ops, "p50 ms": r.p50.toFixed(3), "p99 ms": r.p99.toFixed(3) });
}

const cleanup = new Redis(redisUrl);
const stale = await cleanup.keys(`${prefix}*`);
for (let i = 0; i < stale.length; i += 1000) await cleanup.del(...stale.slice(i, i + 1000));
cleanup.disconnect();

console.log(`consume(): ${CALLERS} concurrent callers, ${seconds} s per row, Bun ${Bun.version}`);
console.table(rows);
