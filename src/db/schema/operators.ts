import { sql } from "drizzle-orm";
import { bigserial, check, index, jsonb, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/**
 * Operators: the people at the admin API and the console, each with one role. Only a SHA-256 of
 * the personal token is stored (as for API keys); the token itself is shown once, at creation.
 * REELAY_ADMIN_TOKEN is not a row: it is the bootstrap identity, always `admin`.
 */
export const operators = pgTable(
  "operators",
  {
    /** "op_" + random */
    id: text("id").primaryKey(),
    /** the person's name, as the audit log shows it */
    name: text("name").notNull(),
    /** admin | billing | support | viewer (src/operators/roles.ts) */
    role: text("role").notNull(),
    /** first characters of the token, safe to show and log (e.g. "ro-AbCd1234") */
    prefix: text("prefix").notNull(),
    /** hex SHA-256 of the token; looked up by this, then compared in constant time */
    hash: text("hash").notNull().unique(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
    /** set once; a revoked operator's token never authenticates again */
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
  },
  (t) => [check("operators_role_known", sql`${t.role} IN ('admin', 'billing', 'support', 'viewer')`)],
);

/**
 * The audit log: one row per state-changing admin or console action, written in the transaction of
 * the change. Append-only: a trigger (migration 0012) refuses UPDATE, TRUNCATE and any DELETE other
 * than the retention prune (rows older than the retention the pruning transaction declares).
 */
export const auditLog = pgTable(
  "audit_log",
  {
    /** increasing: the order of the log and the paging cursor */
    id: bigserial("id", { mode: "number" }).primaryKey(),
    at: timestamp("at", { withTimezone: true }).notNull().defaultNow(),
    /** bootstrap (REELAY_ADMIN_TOKEN) | operator (personal token) | sso (a console session) */
    actorType: text("actor_type").notNull(),
    /** the operator id or the IdP subject; null for the bootstrap token */
    actorId: text("actor_id"),
    actorName: text("actor_name").notNull(),
    /** what was done, "<thing>.<verb>": account.create, credits.grant, key.revoke, … */
    action: text("action").notNull(),
    targetType: text("target_type").notNull(),
    targetId: text("target_id"),
    /** the state before and after, secrets left out (null: nothing before, or nothing after) */
    before: jsonb("before"),
    after: jsonb("after"),
    requestId: text("request_id"),
    clientIp: text("client_ip"),
  },
  (t) => [index("audit_log_at_idx").on(t.at), index("audit_log_target_idx").on(t.targetType, t.targetId), index("audit_log_actor_idx").on(t.actorId)],
);

/**
 * Console sessions of operators signed in with OpenID Connect. The cookie holds a random token;
 * only its SHA-256 is stored. A session ends at `expires_at` (the absolute lifetime) or after the
 * idle lifetime without a request (from `last_seen_at`), or at sign-out.
 */
export const operatorSessions = pgTable("operator_sessions", {
  /** hex SHA-256 of the cookie's token */
  hash: text("hash").primaryKey(),
  /** the IdP's `sub` */
  subject: text("subject").notNull(),
  name: text("name").notNull(),
  role: text("role").notNull(),
  /** what state-changing calls echo in `x-csrf-token` (not a secret from the signed-in page: it reads it from /admin/me) */
  csrf: text("csrf").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  lastSeenAt: timestamp("last_seen_at", { withTimezone: true }).notNull().defaultNow(),
  expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
});

/**
 * Sign-ins under way: the `state` sent to the IdP with its nonce and PKCE verifier, consumed once by
 * the callback (a replayed or forged state finds no row) and refused after 10 minutes.
 */
export const oidcLogins = pgTable("oidc_logins", {
  state: text("state").primaryKey(),
  nonce: text("nonce").notNull(),
  verifier: text("verifier").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});
