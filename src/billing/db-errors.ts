/**
 * Is this error the database being unreachable (as opposed to a statement that failed)? A
 * settlement that fails this way is kept and retried until it lands; one that fails otherwise is
 * isolated so it cannot block the others. One definition for the whole app: src/db/unavailable.ts.
 */
export { isDatabaseUnavailable as isConnectionError } from "../db/unavailable.ts";

/** 23505: two replays of one settlement raced; the loser retries and finds it done */
export const isUniqueViolation = (e: unknown) => String((e as { code?: unknown })?.code ?? "") === "23505";
