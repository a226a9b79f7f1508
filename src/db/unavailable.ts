/**
 * "The database cannot be reached right now" — as opposed to "this query is wrong". One place
 * decides it, for every caller: the HTTP error handler answers 503 service_unavailable with
 * Retry-After (nothing was done, the client may retry), and background work (settlements, the
 * scheduler) keeps its work to retry later instead of dropping it.
 */

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
  // drizzle wraps driver errors (DrizzleQueryError.cause); follow the chain a few levels
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code !== "string") continue;
    if (CONNECTION_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || code.startsWith("08")) return true;
  }
  return false;
}
