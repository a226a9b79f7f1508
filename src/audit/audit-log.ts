/**
 * The audit log: one row per state-changing admin or console action, written by the caller inside
 * the transaction of the change (so a change and its row commit or roll back together), and one JSON
 * log line per row once it committed. Rows never hold secrets: `scrub` drops any field whose name
 * says it is one, whatever the caller passed. The table refuses UPDATE, TRUNCATE and every DELETE
 * but the retention prune (trigger in migration 0012).
 */
import { and, desc, eq, gte, like, lt, lte, sql, type SQL } from "drizzle-orm";
import type { Tx } from "../db/index.ts";
import { auditLog } from "../db/schema/index.ts";
import type { Logger } from "../logger.ts";
import type { Actor } from "../auth/admin-token.ts";

/** Who acted, from where, in which request: what an audit-log row records about the caller. */
export interface AuditContext {
  actor: Actor;
  requestId: string | null;
  clientIp: string | null;
  /** a console session's CSRF token (GET /admin/me hands it to the page) */
  csrf?: string;
}

export interface AuditEntry {
  /** "<thing>.<verb>": account.create, credits.grant, key.rotate, operator.revoke, … */
  action: string;
  target: { type: string; id: string | null };
  before?: unknown;
  after?: unknown;
}

export type AuditRow = typeof auditLog.$inferSelect;

const SECRET_FIELD = /^(key|token|hash|password)$|secret|ciphertext|private/i;

/** A copy of `value` without any field whose name says it holds a secret (at any depth). */
export function scrub(value: unknown): unknown {
  if (value === undefined) return null;
  if (value === null || typeof value !== "object") return value;
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(scrub);
  return Object.fromEntries(Object.entries(value).filter(([k]) => !SECRET_FIELD.test(k)).map(([k, v]) => [k, scrub(v)]));
}

export async function writeAudit(tx: Tx, ctx: AuditContext, entry: AuditEntry): Promise<AuditRow> {
  const [row] = await tx
    .insert(auditLog)
    .values({
      actorType: ctx.actor.type,
      actorId: ctx.actor.id,
      actorName: ctx.actor.name,
      action: entry.action,
      targetType: entry.target.type,
      targetId: entry.target.id,
      before: scrub(entry.before),
      after: scrub(entry.after),
      requestId: ctx.requestId,
      clientIp: ctx.clientIp,
    })
    .returning();
  return row!;
}

/** What GET /admin/audit-log shows of a row. */
export function auditView(row: AuditRow) {
  return {
    id: String(row.id),
    object: "audit_log.entry" as const,
    at: row.at.toISOString(),
    actor: { type: row.actorType, id: row.actorId, name: row.actorName },
    action: row.action,
    target: { type: row.targetType, id: row.targetId },
    before: row.before ?? null,
    after: row.after ?? null,
    request_id: row.requestId,
    client_ip: row.clientIp,
  };
}

/**
 * The one log line per entry, after its transaction committed, whatever the logger's level: the
 * line is a record of the change, not a diagnostic (the CLI logs at warn, to stderr, so that its
 * stdout is the command's JSON answer; a server may run at warn or error too).
 */
export function logAudit(logger: Logger, rows: AuditRow[]) {
  if (!rows.length) return;
  const out = logger.isLevelEnabled("info") ? logger : logger.child({}, { level: "info" });
  for (const row of rows) out.info({ audit: auditView(row) }, "audit");
}

/**
 * Run `work` in one transaction with a `record` that writes audit rows in it; the log lines follow
 * the commit. What admin routes and CLI commands use for every state change.
 */
export async function audited<T>(
  deps: { db: { transaction<R>(fn: (tx: Tx) => Promise<R>): Promise<R> }; logger: Logger },
  ctx: AuditContext,
  work: (tx: Tx, record: (entry: AuditEntry) => Promise<void>) => Promise<T>,
): Promise<T> {
  let rows: AuditRow[] = [];
  const out = await deps.db.transaction(async (tx) => {
    rows = [];
    return work(tx, async (entry) => {
      rows.push(await writeAudit(tx, ctx, entry));
    });
  });
  logAudit(deps.logger, rows);
  return out;
}

export interface AuditQuery {
  /** operator id or IdP subject; "bootstrap" for the bootstrap token */
  actor?: string;
  /** exact, or a prefix ending in "*" ("key.*") */
  action?: string;
  target_type?: string;
  target_id?: string;
  from?: Date;
  to?: Date;
  limit: number;
  /** cursor: the previous page's next_before */
  before?: number;
}

/** Newest first, filtered, one page. */
export async function listAudit(tx: Tx, q: AuditQuery) {
  const where: SQL[] = [];
  if (q.actor === "bootstrap") where.push(eq(auditLog.actorType, "bootstrap"));
  else if (q.actor) where.push(eq(auditLog.actorId, q.actor));
  if (q.action?.endsWith("*")) where.push(like(auditLog.action, q.action.slice(0, -1).replace(/[\\%_]/g, "\\$&") + "%"));
  else if (q.action) where.push(eq(auditLog.action, q.action));
  if (q.target_type) where.push(eq(auditLog.targetType, q.target_type));
  if (q.target_id) where.push(eq(auditLog.targetId, q.target_id));
  if (q.from) where.push(gte(auditLog.at, q.from));
  if (q.to) where.push(lte(auditLog.at, q.to));
  if (q.before) where.push(lt(auditLog.id, q.before));
  const rows = await tx.select().from(auditLog).where(where.length ? and(...where) : undefined).orderBy(desc(auditLog.id)).limit(q.limit + 1);
  const more = rows.length > q.limit;
  const page = rows.slice(0, q.limit);
  return { object: "list" as const, data: page.map(auditView), has_more: more, next_before: more ? page[page.length - 1]!.id : null };
}

/**
 * Delete entries older than `retentionDays`. The table's trigger admits a DELETE only of rows older
 * than the retention the transaction declares (reelay.audit_retention, at least one day), so even
 * this statement cannot reach a newer entry.
 */
export async function pruneAudit(db: { transaction<R>(fn: (tx: Tx) => Promise<R>): Promise<R> }, retentionDays: number): Promise<number> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`SELECT set_config('reelay.audit_retention', ${`${retentionDays} days`}, true)`);
    const gone = await tx.delete(auditLog).where(lt(auditLog.at, sql`now() - make_interval(days => ${retentionDays})`)).returning({ id: auditLog.id });
    return gone.length;
  });
}
