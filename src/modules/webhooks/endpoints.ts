/**
 * Webhook endpoints and the account signing secret: one exported function per statement. An
 * `accountId` of null means "any account" (the admin API); a client passes its own, so another
 * account's endpoint does not exist for it.
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../../db/index.ts";

export interface EndpointRow {
  id: string;
  accountId: string;
  url: string;
  events: string[];
  description: string | null;
  secretCiphertext: string;
  enabled: boolean;
  disabledReason: string | null;
  createdAt: Date;
}

const COLUMNS = sql`id, account_id, url, events, description, secret_ciphertext, enabled, disabled_reason, created_at`;
const ownedBy = (accountId: string | null) => (accountId === null ? sql`` : sql` AND account_id = ${accountId}`);

function toEndpoint(r: Record<string, any>): EndpointRow {
  return {
    id: r.id,
    accountId: r.account_id,
    url: r.url,
    events: parseTextArray(r.events),
    description: r.description,
    secretCiphertext: r.secret_ciphertext,
    enabled: r.enabled === true || r.enabled === "t",
    disabledReason: r.disabled_reason,
    createdAt: new Date(r.created_at),
  };
}

/** text[] arrives as an array (postgres.js, PGlite); a literal "{a,b}" only through exotic paths. */
function parseTextArray(v: unknown): string[] {
  if (Array.isArray(v)) return v as string[];
  if (typeof v === "string") return v.replace(/^\{|\}$/g, "").split(",").filter(Boolean);
  return [];
}

const textArray = (xs: readonly string[]) => sql`ARRAY[${sql.join(xs.map((x) => sql`${x}`), sql`, `)}]::text[]`;

/** Insert unless the account already has `max` endpoints; null when it has. */
export async function insertEndpoint(tx: Tx, e: { id: string; accountId: string; url: string; events: readonly string[]; description: string | null; secretCiphertext: string }, max: number): Promise<EndpointRow | null> {
  const rows = await query(tx, sql`
    INSERT INTO webhook_endpoints (id, account_id, url, events, description, secret_ciphertext)
    SELECT ${e.id}, ${e.accountId}, ${e.url}, ${textArray(e.events)}, ${e.description}, ${e.secretCiphertext}
    WHERE (SELECT count(*) FROM webhook_endpoints WHERE account_id = ${e.accountId}) < ${max}
    RETURNING ${COLUMNS}`);
  return rows[0] ? toEndpoint(rows[0]) : null;
}

export async function listEndpoints(tx: Tx, accountId: string): Promise<EndpointRow[]> {
  const rows = await query(tx, sql`SELECT ${COLUMNS} FROM webhook_endpoints WHERE account_id = ${accountId} ORDER BY created_at, id`);
  return rows.map(toEndpoint);
}

export async function findEndpoint(tx: Tx, id: string, accountId: string | null): Promise<EndpointRow | null> {
  const rows = await query(tx, sql`SELECT ${COLUMNS} FROM webhook_endpoints WHERE id = ${id}${ownedBy(accountId)}`);
  return rows[0] ? toEndpoint(rows[0]) : null;
}

/** Deletes the endpoint and (cascade) its delivery log; pending deliveries are dropped with it. */
export async function deleteEndpoint(tx: Tx, id: string, accountId: string | null): Promise<boolean> {
  const rows = await query(tx, sql`DELETE FROM webhook_endpoints WHERE id = ${id}${ownedBy(accountId)} RETURNING id`);
  return rows.length > 0;
}

/** Change events, description or enabled; enabling clears the reason it was disabled. */
export async function updateEndpoint(tx: Tx, id: string, accountId: string | null, set: { enabled?: boolean; events?: readonly string[]; description?: string | null }): Promise<EndpointRow | null> {
  const parts = [
    set.enabled !== undefined ? sql`enabled = ${set.enabled}, disabled_reason = ${set.enabled ? null : "disabled by its owner"}` : null,
    set.events !== undefined ? sql`events = ${textArray(set.events)}` : null,
    set.description !== undefined ? sql`description = ${set.description}` : null,
  ].filter((p) => p !== null);
  if (parts.length === 0) return findEndpoint(tx, id, accountId);
  const rows = await query(tx, sql`UPDATE webhook_endpoints SET ${sql.join(parts, sql`, `)} WHERE id = ${id}${ownedBy(accountId)} RETURNING ${COLUMNS}`);
  return rows[0] ? toEndpoint(rows[0]) : null;
}

/** The delivery worker's answer to a 410 Gone: nothing more is sent to this endpoint until its owner enables it. */
export async function disableEndpoint(tx: Tx, id: string, reason: string): Promise<void> {
  await query(tx, sql`UPDATE webhook_endpoints SET enabled = false, disabled_reason = ${reason} WHERE id = ${id}`);
}

/** Create or replace the account's secret for jobs' own webhook_url; returns when it was made. */
export async function upsertAccountSecret(tx: Tx, accountId: string, secretCiphertext: string): Promise<Date> {
  const rows = await query<{ created_at: string | Date }>(tx, sql`
    INSERT INTO webhook_account_secrets (account_id, secret_ciphertext) VALUES (${accountId}, ${secretCiphertext})
    ON CONFLICT (account_id) DO UPDATE SET secret_ciphertext = EXCLUDED.secret_ciphertext, created_at = now()
    RETURNING created_at`);
  return new Date(rows[0]!.created_at);
}

export async function hasAccountSecret(tx: Tx, accountId: string): Promise<boolean> {
  const rows = await query(tx, sql`SELECT 1 FROM webhook_account_secrets WHERE account_id = ${accountId}`);
  return rows.length > 0;
}
