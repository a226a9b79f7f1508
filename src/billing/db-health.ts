/**
 * What the credit engine knows about its database: when a statement last succeeded and whether
 * the last ones could not reach it. Every part of the engine reports its statements here, and asks
 * it whether to try one at all (fail fast during an outage) and whether approving from memory is
 * still allowed (the offline bound).
 */
import { databaseUnavailable } from "../errors.ts";
import { isConnectionError } from "./db-errors.ts";

/**
 * After a statement failed to reach the database, requests that would need one are answered 503 at
 * once for this long instead of waiting on the driver's reconnects (one outage request measured
 * 17 s otherwise); the flusher's retries (50 ms doubling to 2 s) detect the recovery meanwhile.
 */
export const FAIL_FAST_MS = 1_000;
/** heartbeats succeed every 100 ms while an instance holds leases; 10 missed ones mean trouble even without an error */
export const HEALTHY_GAP_MS = 1_000;

export class DbHealth {
  lastOk = performance.now();
  lastError: unknown = null;
  /** consecutive statements that could not reach the database, and when the last one failed */
  failures = 0;
  failedAt = 0;

  ok(at = performance.now()): void {
    this.lastOk = at;
    this.failures = 0;
  }

  /** Note a failed statement; returns true when the database was unreachable. */
  failed(e: unknown): boolean {
    if (!isConnectionError(e)) return false;
    this.failures++;
    this.failedAt = performance.now();
    this.lastError = e;
    return true;
  }

  /** a statement failed to reach the database moments ago: answer 503 without trying another */
  failingFast(now: number): boolean {
    return this.failures > 0 && now - this.failedAt < FAIL_FAST_MS;
  }

  /** approvals from memory are allowed: the database answered recently, or not for longer than `offlineMs` */
  mayApproveOffline(now: number, offlineMs: number): boolean {
    const sinceOk = now - this.lastOk;
    return !((this.failures > 0 || sinceOk > HEALTHY_GAP_MS) && sinceOk > offlineMs);
  }

  downMs(): number {
    return this.failures > 0 ? Math.round(performance.now() - this.lastOk) : 0;
  }
}

/** A database connection problem becomes 503 service_unavailable; anything else is rethrown as is. */
export function unavailable(e: unknown): unknown {
  return isConnectionError(e) ? databaseUnavailable(e) : e;
}
