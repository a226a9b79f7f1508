/**
 * Redis-backed limiter shared by every instance pointed at the same Redis, failing OPEN: when Redis
 * is unreachable or slow, answers come from an in-process fallback (per-instance limits are weaker
 * than shared ones, but refusing every request because the cache is down would be worse).
 *
 * Latency budget: commandTimeout 100 ms caps what an outage adds to one request; with
 * enableOfflineQueue off and maxRetriesPerRequest 0, commands made while disconnected fail at once
 * instead of queueing, so during an outage requests pay nothing. After a failed command Redis is
 * skipped for 1 s, so a hung (connected but silent) Redis costs one 100 ms timeout per second, not
 * one per request. ioredis keeps reconnecting; the next successful command ends the outage.
 *
 * Rates (consume) go through leases (leases.ts): units are taken from Redis in slices of 1% of the
 * limit and spent locally, so a busy key costs a round trip per slice, not per request; the
 * tolerance this costs across instances is stated there. Slots (video concurrency) are one round
 * trip each: they are taken once per job, not per request.
 */
import Redis from "ioredis";
import { createMemoryLimiter } from "./memory-limiter.ts";
import { LeasedBuckets, type Take } from "./leases.ts";
import { ACQUIRE_SLOT_LUA, EXTEND_SLOT_LUA, GIVE_BACK_LUA, TAKE_LUA } from "./redis-scripts.ts";
import { assertConsumeArgs, assertSlotArgs, type LimiterLogger, type RateLimiter } from "./types.ts";

export interface RedisLimiterOptions {
  /** answers while Redis is unreachable; default: a memory limiter owned (and closed) by this one */
  fallback?: RateLimiter;
  logger?: LimiterLogger;
  /** namespace for every key; default "reelay:rl:" */
  prefix?: string;
  /** per-command deadline before falling back; default 100 ms */
  commandTimeoutMs?: number;
}

type LimiterRedis = Redis & {
  reelayTake(key: string, min: number, want: number, limit: number, windowMs: number): Promise<[number, number, number, number]>;
  reelayGiveBack(key: string, units: number, limit: number, windowMs: number): Promise<number>;
  reelayAcquireSlot(key: string, max: number, ttlMs: number, token: string): Promise<number>;
  reelayExtendSlot(key: string, token: string, ttlMs: number): Promise<number>;
};

/** tokens handed out by the fallback carry this prefix, so release goes to the backend that issued them */
const FALLBACK_TOKEN = "mem:";
const SKIP_AFTER_FAILURE_MS = 1000;

const consoleLogger: LimiterLogger = {
  error: (msg, fields) => console.error(msg, fields ?? ""),
  info: (msg, fields) => console.info(msg, fields ?? ""),
};

export function createRedisLimiter(url: string, opts: RedisLimiterOptions = {}): RateLimiter {
  const logger = opts.logger ?? consoleLogger;
  const fallback = opts.fallback ?? createMemoryLimiter();
  const ownsFallback = !opts.fallback;
  const prefix = opts.prefix ?? "reelay:rl:";
  const redis = new Redis(url, {
    commandTimeout: opts.commandTimeoutMs ?? 100,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    // reconnect quickly: every second in fallback is a second of per-instance limits
    retryStrategy: (times) => Math.min(times * 100, 1000),
  }) as LimiterRedis;
  redis.defineCommand("reelayTake", { numberOfKeys: 1, lua: TAKE_LUA });
  redis.defineCommand("reelayGiveBack", { numberOfKeys: 1, lua: GIVE_BACK_LUA });
  redis.defineCommand("reelayAcquireSlot", { numberOfKeys: 1, lua: ACQUIRE_SLOT_LUA });
  redis.defineCommand("reelayExtendSlot", { numberOfKeys: 1, lua: EXTEND_SLOT_LUA });

  let skipUntil = 0;
  let inOutage = false;
  let everReady = false;
  let closed = false;

  const startOutage = (reason: string) => {
    if (inOutage || closed) return;
    inOutage = true;
    logger.error("rate limiter: Redis unavailable, using in-process limits (per instance) until it returns", { reason });
  };
  const endOutage = () => {
    skipUntil = 0;
    if (!inOutage) return;
    inOutage = false;
    logger.info("rate limiter: Redis is back, limits are shared again");
  };
  redis.on("ready", () => {
    everReady = true;
    endOutage();
  });
  redis.on("close", () => {
    if (everReady) startOutage("connection closed");
  });
  // ioredis emits 'error' on every failed reconnect; the outage is logged once above instead
  redis.on("error", () => {});

  const usable = () => redis.status === "ready" && Date.now() >= skipUntil;

  const rateKey = (key: string) => `${prefix}rate:${key}`;
  const slotKey = (key: string) => `${prefix}slot:${key}`;

  /** One Redis command; throws when Redis is being skipped or the command fails. */
  async function viaRedis<T>(command: () => Promise<T>): Promise<T> {
    if (!usable()) throw new Error(`redis status ${redis.status}`);
    try {
      const result = await command();
      endOutage();
      return result;
    } catch (err) {
      skipUntil = Date.now() + SKIP_AFTER_FAILURE_MS;
      throw err;
    }
  }

  async function withFallback<T>(command: () => Promise<T>, viaFallback: () => Promise<T>): Promise<T> {
    try {
      return await viaRedis(command);
    } catch (err) {
      startOutage((err as Error)?.message ?? String(err));
      return viaFallback();
    }
  }

  const leases = new LeasedBuckets({
    async take(key, min, want, limit, windowMs): Promise<Take> {
      const [allowed, granted, remaining, resetMs] = await viaRedis(() => redis.reelayTake(rateKey(key), min, want, limit, windowMs));
      return { allowed: allowed === 1, granted, remaining, resetMs };
    },
    async giveBack(key, units, limit, windowMs) {
      await viaRedis(() => redis.reelayGiveBack(rateKey(key), units, limit, windowMs));
    },
  });

  return {
    async consume(key, cost, limit, windowMs) {
      assertConsumeArgs(key, cost, limit, windowMs);
      // the leases ask Redis (viaRedis) only when their units run out
      try {
        return await leases.consume(key, cost, limit, windowMs);
      } catch (err) {
        startOutage((err as Error)?.message ?? String(err));
        return fallback.consume(key, cost, limit, windowMs);
      }
    },
    async acquireSlot(key, max, ttlMs) {
      assertSlotArgs(key, max, ttlMs);
      const token = crypto.randomUUID();
      return withFallback(
        async () => ((await redis.reelayAcquireSlot(slotKey(key), max, ttlMs, token)) === 1 ? token : null),
        async () => {
          const local = await fallback.acquireSlot(key, max, ttlMs);
          return local === null ? null : FALLBACK_TOKEN + local;
        },
      );
    },
    async releaseSlot(key, token) {
      if (token.startsWith(FALLBACK_TOKEN)) return fallback.releaseSlot(key, token.slice(FALLBACK_TOKEN.length));
      // a release lost to an outage is not retried: the slot's TTL frees it
      await withFallback(
        async () => void (await redis.zrem(slotKey(key), token)),
        async () => {},
      );
    },
    async extendSlot(key, token, ttlMs) {
      assertSlotArgs(key, 1, ttlMs);
      if (token.startsWith(FALLBACK_TOKEN)) return fallback.extendSlot(key, token.slice(FALLBACK_TOKEN.length), ttlMs);
      // during an outage the slot cannot be checked; say yes rather than abort a running job
      return withFallback(
        async () => (await redis.reelayExtendSlot(slotKey(key), token, ttlMs)) === 1,
        async () => true,
      );
    },
    health: () => ({ backend: "redis", degraded: !usable() }),
    async close() {
      await leases.close(); // give unspent units back while Redis is still connected
      closed = true;
      if (redis.status === "ready") await redis.quit().catch(() => redis.disconnect());
      else redis.disconnect();
      if (ownsFallback) await fallback.close();
    },
  };
}
