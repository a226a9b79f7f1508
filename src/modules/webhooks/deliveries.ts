/**
 * The delivery queue: one exported function per statement.
 *
 * A claim is ONE statement, as for video jobs: the inner SELECT … FOR UPDATE SKIP LOCKED picks due
 * rows no other instance is claiming right now, the outer UPDATE stamps our lease and counts the
 * attempt. The lease outlives the per-attempt timeout, so a row is only claimed again when its
 * instance died mid-attempt; then the receiver may see that attempt twice, with the same
 * webhook-id (at-least-once).
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../../db/index.ts";

export interface ClaimedDelivery {
  id: string;
  accountId: string;
  endpointId: string | null;
  url: string;
  payload: string;
  attempts: number;
  /** the sealed signing secret (endpoint's, or the account's for a job's own URL); null if it is gone */
  secretCiphertext: string | null;
  /** the job's trace (null: none) */
  traceparent?: string | null;
}

export interface DeliveryRow {
  id: string;
  endpointId: string | null;
  jobId: string;
  eventType: string;
  url: string;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  nextAttemptAt: Date | null;
  lastAttemptAt: Date | null;
  deliveredAt: Date | null;
  createdAt: Date;
}

const ms = (n: number) => sql`${n} * interval '1 millisecond'`;
const ids = (xs: readonly string[]) => sql`ARRAY[${sql.join(xs.map((x) => sql`${x}`), sql`, `)}]::text[]`;

/**
 * Claim up to `limit` due deliveries. `skipUrls`: targets this instance already has its fill of
 * in flight, so one slow receiver cannot take every slot.
 */
export async function claimDueDeliveries(tx: Tx, o: { owner: string; leaseMs: number; limit: number; skipUrls: readonly string[] }): Promise<ClaimedDelivery[]> {
  if (o.limit <= 0) return [];
  const rows = await query<Record<string, any>>(tx, sql`
    UPDATE webhook_deliveries d SET lease_owner = ${o.owner}, lease_expires_at = now() + ${ms(o.leaseMs)}, attempts = d.attempts + 1, last_attempt_at = now()
    WHERE d.id IN (
      SELECT id FROM webhook_deliveries
      WHERE status = 'pending' AND next_attempt_at <= now() AND (lease_expires_at IS NULL OR lease_expires_at < now())
        ${o.skipUrls.length ? sql`AND url <> ALL (${ids(o.skipUrls)})` : sql``}
      ORDER BY next_attempt_at
      LIMIT ${o.limit}
      FOR UPDATE SKIP LOCKED
    )
    RETURNING d.id, d.account_id, d.endpoint_id, d.url, d.payload, d.attempts, d.traceparent,
      CASE WHEN d.endpoint_id IS NULL
        THEN (SELECT s.secret_ciphertext FROM webhook_account_secrets s WHERE s.account_id = d.account_id)
        ELSE (SELECT e.secret_ciphertext FROM webhook_endpoints e WHERE e.id = d.endpoint_id)
      END AS secret_ciphertext`);
  return rows.map((r) => ({
    id: r.id,
    accountId: r.account_id,
    endpointId: r.endpoint_id,
    url: r.url,
    payload: r.payload,
    attempts: Number(r.attempts),
    secretCiphertext: r.secret_ciphertext ?? null,
    traceparent: r.traceparent ?? null,
  }));
}

/**
 * Record 2xx answers, many at once (one statement for a burst of successes). lease_owner stays:
 * on a delivered row it names the instance that delivered it (for operators and tests).
 */
export async function markDelivered(tx: Tx, owner: string, done: ReadonlyArray<{ id: string; status: number }>): Promise<void> {
  if (done.length === 0) return;
  await query(tx, sql`
    UPDATE webhook_deliveries d SET status = 'delivered', delivered_at = now(), last_status = x.status, last_error = NULL, lease_expires_at = NULL
    FROM unnest(${ids(done.map((d) => d.id))}, ARRAY[${sql.join(done.map((d) => sql`${d.status}`), sql`, `)}]::int[]) AS x(id, status)
    WHERE d.id = x.id AND d.lease_owner = ${owner}`);
}

/** A failed attempt: due again after `delayMs`, or failed for good when that is past the delivery's retry window. */
export async function markAttemptFailed(tx: Tx, owner: string, id: string, f: { status: number | null; error: string; delayMs: number }): Promise<void> {
  await query(tx, sql`
    UPDATE webhook_deliveries SET
      status = CASE WHEN now() + ${ms(f.delayMs)} > give_up_at THEN 'failed' ELSE 'pending' END,
      next_attempt_at = now() + ${ms(f.delayMs)}, last_status = ${f.status}, last_error = ${f.error.slice(0, 500)},
      lease_owner = NULL, lease_expires_at = NULL
    WHERE id = ${id} AND lease_owner = ${owner}`);
}

/** No more attempts for this delivery (410 Gone from a job's own URL). */
export async function markFailed(tx: Tx, owner: string, id: string, f: { status: number | null; error: string }): Promise<void> {
  await query(tx, sql`
    UPDATE webhook_deliveries SET status = 'failed', last_status = ${f.status}, last_error = ${f.error.slice(0, 500)}, lease_owner = NULL, lease_expires_at = NULL
    WHERE id = ${id} AND lease_owner = ${owner}`);
}

/** An endpoint was disabled: its queued deliveries fail now instead of waiting out their window. */
export async function failPendingOfEndpoint(tx: Tx, endpointId: string, reason: string): Promise<number> {
  const rows = await query(tx, sql`
    UPDATE webhook_deliveries SET status = 'failed', last_error = ${reason}, lease_owner = NULL, lease_expires_at = NULL
    WHERE endpoint_id = ${endpointId} AND status = 'pending' RETURNING id`);
  return rows.length;
}

/** On shutdown: deliveries this instance holds are claimable again at once. */
export async function releaseDeliveryLeases(tx: Tx, owner: string): Promise<number> {
  const rows = await query(tx, sql`UPDATE webhook_deliveries SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = ${owner} AND status = 'pending' RETURNING id`);
  return rows.length;
}

/**
 * Send a delivery again, with the same webhook-id and body (receivers that already processed it
 * recognise it). Its retry window restarts; the workers are woken by a notification.
 */
export async function replayDelivery(tx: Tx, id: string, accountId: string | null, retryWindowMs: number): Promise<DeliveryRow | null> {
  const rows = await query<Record<string, any>>(tx, sql`
    WITH r AS (
      UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), give_up_at = now() + ${ms(retryWindowMs)}, lease_owner = NULL, lease_expires_at = NULL
      WHERE id = ${id}${accountId === null ? sql`` : sql` AND account_id = ${accountId}`}
      RETURNING ${DELIVERY_COLUMNS}
    )
    SELECT r.*, pg_notify('reelay_webhooks', '') IS NULL AS woke FROM r`);
  return rows[0] ? toDelivery(rows[0]) : null;
}

/** Newest first; filter by endpoint, job and status; cursor = the previous page's last id. */
export async function listDeliveries(tx: Tx, f: { accountId: string | null; endpointId?: string; jobId?: string; status?: string; limit: number; after?: string }) {
  const where = [
    f.accountId !== null ? sql`account_id = ${f.accountId}` : null,
    f.endpointId !== undefined ? sql`endpoint_id = ${f.endpointId}` : null,
    f.jobId !== undefined ? sql`job_id = ${f.jobId}` : null,
    f.status !== undefined ? sql`status = ${f.status}` : null,
    f.after !== undefined ? sql`(created_at, id) < (SELECT created_at, id FROM webhook_deliveries WHERE id = ${f.after})` : null,
  ].filter((w) => w !== null);
  const rows = await query<Record<string, any>>(tx, sql`
    SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries
    ${where.length ? sql`WHERE ${sql.join(where, sql` AND `)}` : sql``}
    ORDER BY created_at DESC, id DESC LIMIT ${f.limit + 1}`);
  return { rows: rows.slice(0, f.limit).map(toDelivery), hasMore: rows.length > f.limit };
}

const DELIVERY_COLUMNS = sql`id, endpoint_id, job_id, event_type, url, status, attempts, last_status, last_error, next_attempt_at, last_attempt_at, delivered_at, created_at`;

const date = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string));

function toDelivery(r: Record<string, any>): DeliveryRow {
  return {
    id: r.id,
    endpointId: r.endpoint_id,
    jobId: r.job_id,
    eventType: r.event_type,
    url: r.url,
    status: r.status,
    attempts: Number(r.attempts),
    lastStatus: r.last_status === null ? null : Number(r.last_status),
    lastError: r.last_error,
    nextAttemptAt: r.status === "pending" ? date(r.next_attempt_at) : null,
    lastAttemptAt: date(r.last_attempt_at),
    deliveredAt: date(r.delivered_at),
    createdAt: new Date(r.created_at),
  };
}
