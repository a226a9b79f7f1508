/**
 * In-process limiter: the default without REDIS_URL and the fallback of the Redis limiter.
 * Limits are per process, so N instances allow N × limit.
 */
import { gcra } from "./gcra.ts";
import { assertConsumeArgs, assertSlotArgs, type RateLimiter } from "./types.ts";

export interface MemoryLimiterOptions {
  /** how often idle keys are dropped; an idle key costs ~100 bytes, so 10 s keeps churn cheap */
  sweepIntervalMs?: number;
  /** ms clock; monotonic by default so wall-clock jumps neither free nor freeze limits */
  now?: () => number;
}

export interface MemoryLimiter extends RateLimiter {
  /** keys currently held in memory (for metrics, and to show idle keys do get dropped) */
  trackedKeys(): number;
}

export function createMemoryLimiter(opts: MemoryLimiterOptions = {}): MemoryLimiter {
  const now = opts.now ?? (() => performance.now());
  /** key → GCRA theoretical arrival time; the key is idle (and deletable) once it is in the past */
  const tats = new Map<string, number>();
  /** key → token → expiry */
  const slots = new Map<string, Map<string, number>>();

  const sweep = () => {
    const t = now();
    for (const [key, tat] of tats) if (tat <= t) tats.delete(key);
    for (const [key, held] of slots) {
      for (const [token, expires] of held) if (expires <= t) held.delete(token);
      if (held.size === 0) slots.delete(key);
    }
  };
  const timer = setInterval(sweep, opts.sweepIntervalMs ?? 10_000);
  timer.unref?.();

  const liveSlots = (key: string, t: number) => {
    const held = slots.get(key);
    if (held) for (const [token, expires] of held) if (expires <= t) held.delete(token);
    return held;
  };

  return {
    async consume(key, cost, limit, windowMs) {
      assertConsumeArgs(key, cost, limit, windowMs);
      const decision = gcra(tats.get(key), now(), cost, limit, windowMs);
      if (decision.allowed && cost > 0) tats.set(key, decision.tat);
      return { allowed: decision.allowed, limit, remaining: decision.remaining, resetMs: decision.resetMs };
    },
    async acquireSlot(key, max, ttlMs) {
      assertSlotArgs(key, max, ttlMs);
      const t = now();
      const held = liveSlots(key, t) ?? new Map<string, number>();
      if (held.size >= max) return null;
      const token = crypto.randomUUID();
      held.set(token, t + ttlMs);
      slots.set(key, held);
      return token;
    },
    async releaseSlot(key, token) {
      const held = slots.get(key);
      held?.delete(token);
      if (held?.size === 0) slots.delete(key);
    },
    async extendSlot(key, token, ttlMs) {
      assertSlotArgs(key, 1, ttlMs);
      const t = now();
      const held = liveSlots(key, t);
      if (!held?.has(token)) return false;
      held.set(token, t + ttlMs);
      return true;
    },
    health: () => ({ backend: "memory", degraded: false }),
    trackedKeys: () => tats.size + slots.size,
    async close() {
      clearInterval(timer);
      tats.clear();
      slots.clear();
    },
  };
}
