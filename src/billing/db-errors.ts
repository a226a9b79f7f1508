/**
 * Is this error the database being unreachable (as opposed to a statement that failed)? A
 * settlement that fails this way is kept and retried until it lands; one that fails otherwise is
 * isolated so it cannot block the others.
 */
const CONNECTION_CODES = new Set([
  "ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN",
  // postgres.js
  "CONNECTION_CLOSED", "CONNECTION_ENDED", "CONNECTION_DESTROYED", "CONNECT_TIMEOUT",
  // SQLSTATE: admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections
  "57P01", "57P02", "57P03", "53300",
]);

export function isConnectionError(e: unknown): boolean {
  for (let cur = e, depth = 0; cur && depth < 4; cur = (cur as { cause?: unknown }).cause, depth++) {
    const code = String((cur as { code?: unknown }).code ?? "");
    if (CONNECTION_CODES.has(code) || code.startsWith("08")) return true;
    if (/connection (terminated|closed|refused)|server closed the connection|write CONNECTION_CLOSED/i.test(String((cur as Error).message ?? ""))) return true;
  }
  return false;
}

/** 23505: two replays of one settlement raced; the loser retries and finds it done */
export const isUniqueViolation = (e: unknown) => String((e as { code?: unknown })?.code ?? "") === "23505";
