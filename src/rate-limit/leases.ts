/**
 * Leases: slices of a shared (Redis) rate-limit bucket held in memory, so a busy key costs one Redis
 * round trip per lease instead of one per request (one per request halved chat throughput:
 * bench/chat-proxy.ts, Redis vs in-process limiter).
 *
 * A consume spends units this instance already took from Redis. When they do not cover the cost,
 * one take asks Redis for the shortfall plus up to ℓ − 1 spare units, ℓ = leaseSize(limit) = 1% of
 * the limit; Redis grants what fits (at least the shortfall, or refuses) and counts it at once, as
 * if spent. So one request in ℓ pays a round trip. Callers that find a take in flight for their key
 * wait for it instead of asking too. A lease left unused for IDLE_GIVE_BACK_MS gives its spare
 * units back (the bucket's TAT moves back by them), and so does close().
 *
 * Tolerance, N instances sharing a limit L (ℓ = max(1, floor(L / 100))):
 *  - over the limit: every unit is counted in Redis before it is spent, so a window can only gain
 *    the spare units that sat in leases when it began: at most N × (ℓ − 1) over any window
 *    (under N % of the limit);
 *  - early refusals: up to (N − 1) × (ℓ − 1) units may sit unused in other instances' leases,
 *    for at most IDLE_GIVE_BACK_MS after those instances last used them;
 *  - limits below 200 per window have ℓ = 1, no spare units: one round trip per request, exact.
 * The x-ratelimit-* numbers an instance reports are its own view: exact with one instance, and with
 * several they miss what the others spent since this instance last asked Redis.
 */
import type { ConsumeResult } from "./types.ts";

/** 1% of the limit: a round trip per ℓ requests, and ℓ − 1 units per instance the limit may be off by */
const LEASE_FRACTION = 0.01;
/** a lease idle this long goes back to Redis, so units do not sit unused on a quiet instance */
export const IDLE_GIVE_BACK_MS = 1000;
const EPSILON = 1e-6;

export function leaseSize(limit: number): number {
  return Math.max(1, Math.floor(limit * LEASE_FRACTION));
}

/** What a take from the shared bucket answers (redis-scripts.ts TAKE_LUA). */
export interface Take {
  allowed: boolean;
  /** units now counted for this instance (≥ min when allowed) */
  granted: number;
  /** units the shared bucket could still give after this take */
  remaining: number;
  /** allowed: ms until the bucket is full again; refused: ms until `min` units fit */
  resetMs: number;
}

export interface LeaseBackend {
  /** take between `min` and `want` units (as many as fit), or refuse when `min` does not fit */
  take(key: string, min: number, want: number, limit: number, windowMs: number): Promise<Take>;
  /** return `units` taken earlier and not spent */
  giveBack(key: string, units: number, limit: number, windowMs: number): Promise<void>;
}

interface Lease {
  key: string;
  limit: number;
  windowMs: number;
  /** taken from the shared bucket, not spent yet */
  units: number;
  /** the shared bucket's TAT right after our last take, on our clock */
  tat: number;
  usedAt: number;
  taking: Promise<unknown> | null;
}

export class LeasedBuckets {
  private readonly leases = new Map<string, Lease>();
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(private readonly backend: LeaseBackend, private readonly now: () => number = () => performance.now()) {
    this.timer = setInterval(() => this.giveBackIdle(), IDLE_GIVE_BACK_MS / 2);
    this.timer.unref?.();
  }

  /** Throws what the backend throws (the caller answers from its fallback then). */
  async consume(key: string, cost: number, limit: number, windowMs: number): Promise<ConsumeResult> {
    // a changed limit starts a lease of its own; the old one is given back once idle
    const id = `${key}\u0000${limit}\u0000${windowMs}`;
    let lease = this.leases.get(id);
    if (cost > limit || cost === 0) {
      // refused whatever we hold ("request too large"), or a question only the bucket can answer
      const r = await this.backend.take(key, cost, cost, limit, windowMs);
      return { allowed: r.allowed, limit, remaining: Math.min(limit, r.remaining + (lease?.units ?? 0)), resetMs: r.resetMs };
    }
    if (!lease) {
      lease = { key, limit, windowMs, units: 0, tat: this.now(), usedAt: this.now(), taking: null };
      this.leases.set(id, lease);
    }
    for (;;) {
      if (lease.units >= cost) {
        lease.units -= cost;
        lease.usedAt = this.now();
        return this.answer(lease, cost);
      }
      if (lease.taking) {
        await lease.taking.catch(() => {});
        continue;
      }
      const shortfall = cost - lease.units;
      const taking = this.backend.take(key, shortfall, shortfall + leaseSize(limit) - 1, limit, windowMs);
      lease.taking = taking;
      let r: Take;
      try {
        r = await taking;
      } finally {
        lease.taking = null;
      }
      if (!r.allowed) return { allowed: false, limit, remaining: Math.min(limit, r.remaining + lease.units), resetMs: r.resetMs };
      // spent in this same microtask (below), so callers waiting on the take cannot get there first
      lease.units += r.granted;
      lease.tat = this.now() + r.resetMs;
    }
  }

  /** Give every unspent unit back (best effort: a unit lost to an outage only expires with its bucket). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    const all = [...this.leases];
    this.leases.clear();
    await Promise.allSettled(all.filter(([, l]) => l.units > 0).map(([, l]) => this.backend.giveBack(l.key, l.units, l.limit, l.windowMs)));
  }

  /** This instance's view of the bucket after spending `cost`: as if its unspent units were given back. */
  private answer(lease: Lease, cost: number): ConsumeResult {
    const interval = lease.windowMs / lease.limit;
    const now = this.now();
    // the spend counts from now at the latest (a unit taken a while ago may have refilled already)
    const tat = Math.max(lease.tat - lease.units * interval, now + cost * interval);
    const remaining = Math.max(0, Math.floor((lease.windowMs - (tat - now)) / interval + EPSILON));
    return { allowed: true, limit: lease.limit, remaining, resetMs: Math.ceil(tat - now) };
  }

  /** Leases with a take in flight are never dropped, so a lease in use is never detached from the map. */
  private giveBackIdle(): void {
    const now = this.now();
    for (const [id, lease] of this.leases) {
      if (lease.taking || now - lease.usedAt < IDLE_GIVE_BACK_MS) continue;
      this.leases.delete(id);
      if (lease.units > 0) this.backend.giveBack(lease.key, lease.units, lease.limit, lease.windowMs).catch(() => {});
    }
  }
}
