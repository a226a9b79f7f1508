/**
 * "The database cannot be reached right now" — as opposed to "this query is wrong". One place
 * decides it, for every caller: the HTTP error handler answers 503 service_unavailable with
 * Retry-After (nothing was done, the client may retry), and background work (settlements, the
 * scheduler) keeps its work to retry later instead of dropping it.
 */

import type { Logger } from "../logger.ts";

/** postgres.js connection failures and the socket errors beneath them */
const CONNECTION_CODES = new Set([
  "CONNECTION_CLOSED", "CONNECTION_ENDED", "CONNECTION_DESTROYED", "CONNECT_TIMEOUT",
  "ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN",
]);

/**
 * SQLSTATEs of a server that is going away or not there yet: class 08 (connection exception),
 * 57P01 admin_shutdown (pg_ctl stop -m fast), 57P02 crash_shutdown, 57P03 cannot_connect_now
 * (starting up or shutting down), 53300 too_many_connections.
 */
const UNAVAILABLE_SQLSTATES = new Set(["57P01", "57P02", "57P03", "53300"]);

export function isDatabaseUnavailable(err: unknown): boolean {
  return codesOf(err).some((code) => CONNECTION_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || code.startsWith("08"));
}

/** Whether the error, or one it wraps, carries SQLSTATE `state` (e.g. 40P01 deadlock_detected). */
export function hasSqlState(err: unknown, state: string): boolean {
  return codesOf(err).includes(state);
}

/** the codes along the error's cause chain: drizzle wraps driver errors (DrizzleQueryError.cause) */
function codesOf(err: unknown): string[] {
  const codes: string[] = [];
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") codes.push(code);
  }
  return codes;
}

/**
 * A boot step that needs the database, tried again while the database cannot be reached — a
 * PostgreSQL starting beside reelay (compose, a pod's sidecar) or one too loaded to finish a
 * connection's startup within connect_timeout (a boot on a busy 2-core machine exited with
 * CONNECT_TIMEOUT) — until `waitMs` has passed. Any other error is thrown at once; the last
 * unavailable one is thrown when the wait is over. Every step given here may run again: it wrote
 * nothing, or it is idempotent (migrations run in a transaction under a lock).
 */
export async function untilDatabaseAnswers<T>(what: string, waitMs: number, step: () => Promise<T>, logger: Pick<Logger, "warn">): Promise<T> {
  const until = performance.now() + waitMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await step();
    } catch (e) {
      const left = until - performance.now();
      if (!isDatabaseUnavailable(e) || left <= 0) throw e;
      const pauseMs = Math.min(250 * 2 ** attempt, 2_000, left);
      logger.warn({ err: e, what, attempt: attempt + 1, retryInMs: Math.round(pauseMs) }, "the database cannot be reached yet; trying again");
      await Bun.sleep(pauseMs);
    }
  }
}
