/**
 * The CLI's changes are in the audit log like the admin API's: one row per change, written in the
 * change's own transaction (the same `audited` the admin routes use), the actor the host user who
 * ran the command (no request id, no client address).
 */
import { userInfo } from "node:os";
import { audited, type AuditContext, type AuditEntry } from "../audit/audit-log.ts";
import type { Db, Tx } from "../db/index.ts";
import type { Logger } from "../logger.ts";

export function cliAuditContext(): AuditContext {
  let user = "unknown";
  try {
    user = userInfo().username;
  } catch {}
  return { actor: { type: "cli", id: null, name: `cli (${user})`, role: "admin" }, requestId: null, clientIp: null };
}

/** a logger for commands run without one (tests calling a command directly) */
const quiet = { info() {}, isLevelEnabled: () => true } as unknown as Logger;

/** Run a CLI command's change and its audit rows in one transaction. */
export function cliAudited<T>(db: Db, logger: Logger | undefined, work: (tx: Tx, record: (entry: AuditEntry) => Promise<void>) => Promise<T>): Promise<T> {
  return audited({ db, logger: logger ?? quiet }, cliAuditContext(), work);
}
