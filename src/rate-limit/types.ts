export interface ConsumeResult {
  allowed: boolean;
  limit: number;
  /** units that could still be consumed right now */
  remaining: number;
  /** allowed: ms until the limit is fully replenished; refused: ms until `cost` units fit (Retry-After) */
  resetMs: number;
}

export interface LimiterHealth {
  backend: "redis" | "memory";
  /** true while a Redis limiter answers from its in-process fallback */
  degraded: boolean;
}

export interface RateLimiter {
  /** consume `cost` units from `key`, allowing `limit` units per `windowMs` (GCRA, see gcra.ts) */
  consume(key: string, cost: number, limit: number, windowMs: number): Promise<ConsumeResult>;
  /** take one of `max` concurrency slots for `key`; null when all are taken. Slots expire after `ttlMs`. */
  acquireSlot(key: string, max: number, ttlMs: number): Promise<string | null>;
  /** free a slot taken by acquireSlot (unknown or expired tokens are ignored) */
  releaseSlot(key: string, token: string): Promise<void>;
  /** push a held slot's expiry to `ttlMs` from now (heartbeat for long jobs); false if it already expired */
  extendSlot(key: string, token: string, ttlMs: number): Promise<boolean>;
  health(): LimiterHealth;
  close(): Promise<void>;
}

/** The subset of the app's logger the limiter needs (PluginLogger satisfies it). */
export interface LimiterLogger {
  error(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
}

/** Arguments are checked before any backend is asked, so a bad call never looks like an outage. */
export function assertConsumeArgs(key: string, cost: number, limit: number, windowMs: number): void {
  if (!key) throw new RangeError("rate limit key must not be empty");
  if (!Number.isInteger(cost) || cost < 0) throw new RangeError(`cost must be an integer >= 0, got ${cost}`);
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`limit must be an integer >= 1, got ${limit}`);
  if (!Number.isFinite(windowMs) || windowMs <= 0) throw new RangeError(`windowMs must be > 0, got ${windowMs}`);
}

export function assertSlotArgs(key: string, max: number, ttlMs: number): void {
  if (!key) throw new RangeError("slot key must not be empty");
  if (!Number.isInteger(max) || max < 1) throw new RangeError(`max must be an integer >= 1, got ${max}`);
  if (!Number.isInteger(ttlMs) || ttlMs < 1) throw new RangeError(`ttlMs must be an integer >= 1, got ${ttlMs}`);
}
