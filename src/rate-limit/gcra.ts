/**
 * GCRA (generic cell rate algorithm), the math shared by the memory limiter and the Redis script
 * (redis-scripts.ts repeats it in Lua; keep the two in step).
 *
 * Why GCRA and not a sliding-window log: the state per key is ONE number (the "theoretical arrival
 * time", TAT), so memory and Redis traffic stay O(1) per key whatever the limit (a log for 600
 * req/min keeps 600 ZSET entries per key and a ZREMRANGEBYSCORE per call); a key expires by itself
 * when TAT passes; `cost` > 1 is one addition. Semantics: up to `limit` units back-to-back, then
 * one unit every `windowMs / limit` — limit 10 per 60 s allows exactly 10 at once, then one per 6 s.
 * The trade-off: unlike a sliding log it is a rate, not a count, so over any span of `windowMs` a
 * client that drains the burst and then keeps pace gets up to 2 × limit (burst + refill).
 */
export interface GcraDecision {
  allowed: boolean;
  remaining: number;
  resetMs: number;
  /** TAT to store when allowed (unchanged otherwise) */
  tat: number;
}

/**
 * absorbs float error from windowMs / limit (e.g. 1000 / 3) so counts don't drop by one, and from
 * (now + 36000) - now = 36000.000000000015 so a reset doesn't round up to one more millisecond
 */
const EPSILON = 1e-6;
const ceilMs = (ms: number) => Math.ceil(ms - EPSILON);

export function gcra(storedTat: number | undefined, now: number, cost: number, limit: number, windowMs: number): GcraDecision {
  const interval = windowMs / limit;
  const tat = Math.max(storedTat ?? now, now);
  const newTat = tat + cost * interval;
  const allowAt = newTat - windowMs;
  const remainingAt = (t: number) => Math.max(0, Math.floor((windowMs - (t - now)) / interval + EPSILON));
  if (cost > limit) return { allowed: false, remaining: remainingAt(tat), resetMs: ceilMs(tat - now), tat };
  if (allowAt - now > EPSILON) return { allowed: false, remaining: remainingAt(tat), resetMs: ceilMs(allowAt - now), tat };
  return { allowed: true, remaining: remainingAt(newTat), resetMs: ceilMs(newTat - now), tat: newTat };
}
