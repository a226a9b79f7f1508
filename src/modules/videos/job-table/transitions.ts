/**
 * Job states and the only ways between them. Every state change is one conditional UPDATE
 * (`… WHERE status IN (<states allowed to reach the target>)`), so two instances, a cancel and a
 * scheduler, or a retry after a crash can never move a job twice: the loser's UPDATE matches no row.
 * Money moves in the same transaction as the final status (settle on completed, release on failed),
 * and so does the webhook outbox row of the event the change is. The moves are the functions below
 * (saveHandle, completeJob, failJob, expireResults); `transition` itself is private to them.
 */
import { sql, type SQL } from "drizzle-orm";
import type { AppDeps } from "../../../deps.ts";
import { query, type Tx } from "../../../db/index.ts";
import { statusIn, VIDEO_JOB_STATUSES, type VideoJobStatus } from "../../../db/schema/index.ts";
import { jobCharge, type JobCharge } from "../../../billing/index.ts";
import { enqueueJobEvent } from "../../webhooks/outbox.ts";
import { eventTypeFor, jobEventData } from "../job-event.ts";
import { columns, readRow, VIEW_COLUMNS, type VideoJobRow } from "./columns.ts";

/** from → allowed targets. queued → failed covers cancels and submits the provider refused. */
const ALLOWED_TRANSITIONS: Readonly<Record<VideoJobStatus, readonly VideoJobStatus[]>> = {
  queued: ["processing", "failed"],
  processing: ["completed", "failed"],
  completed: ["expired"],
  failed: [],
  expired: [],
};

function allowedFrom(to: VideoJobStatus): VideoJobStatus[] {
  return VIDEO_JOB_STATUSES.filter((from) => ALLOWED_TRANSITIONS[from].includes(to));
}

/** What a transition returns of the moved job: its view (for the event it is) and what billing needs. */
const MOVED_COLUMNS = [...VIEW_COLUMNS, "accountId", "keyId", "holdId", "pluginHandle", "webhookUrl", "linksBase", "priceBasis", "blobStore", "route"] as const;
export type MovedJob = Pick<VideoJobRow, (typeof MOVED_COLUMNS)[number]>;
export interface Transitioned {
  from: VideoJobStatus;
  job: MovedJob;
}

/**
 * Move job `id` to `to` if its current status allows it (or already is `to`, when `stay`), applying
 * `set` too. `guard` adds conditions (e.g. the lease owner). Returns null when nothing matched.
 */
async function transition(tx: Tx, id: string, to: VideoJobStatus, opts: { set?: SQL; guard?: SQL; stay?: boolean } = {}): Promise<Transitioned | null> {
  const from = opts.stay ? [...allowedFrom(to), to] : allowedFrom(to);
  if (from.length === 0) throw new Error(`no state may move to ${to}`);
  const rows = await query<Record<string, unknown>>(tx, sql`
    UPDATE video_jobs v SET status = ${to}${opts.set ? sql`, ${opts.set}` : sql``}
    FROM (SELECT id, status AS prev FROM video_jobs WHERE id = ${id} FOR UPDATE) o
    WHERE v.id = o.id AND ${statusIn(from, "v")}${opts.guard ? sql` AND ${opts.guard}` : sql``}
    RETURNING o.prev, ${columns(MOVED_COLUMNS, "v")}`);
  const r = rows[0];
  return r ? { from: r.prev as VideoJobStatus, job: readRow(r, MOVED_COLUMNS) } : null;
}

/**
 * Retention: completed jobs past expires_at become expired (their objects are then deleted by
 * sweepStoredObjects). Batches of 200 keep each transaction short.
 */
export async function expireResults(deps: Pick<AppDeps, "database" | "telemetry">, limit = 200): Promise<number> {
  const to: VideoJobStatus = "expired";
  const rows = await query<Record<string, unknown>>(deps.database.db, sql`
    UPDATE video_jobs v SET status = ${to}
    FROM (
      SELECT id, status AS prev FROM video_jobs WHERE ${statusIn(allowedFrom(to))} AND expires_at < now()
      ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
    ) o
    WHERE v.id = o.id
    RETURNING o.prev, ${columns(MOVED_COLUMNS, "v")}`);
  for (const r of rows) reportTransition(deps, { from: r.prev as VideoJobStatus, job: readRow(r, MOVED_COLUMNS) });
  return rows.length;
}

/**
 * DELETE /v1/videos/{id} of a completed job: it expires now (its objects are deleted by the next
 * sweep, or at once by the caller). Null when the job is not completed (or not this account's).
 */
export async function expireNow(deps: Pick<AppDeps, "database" | "telemetry">, id: string, accountId: string): Promise<MovedJob | null> {
  const moved = await transition(deps.database.db, id, "expired", { set: sql`expires_at = least(expires_at, now())`, guard: sql`v.account_id = ${accountId}` });
  reportTransition(deps, moved);
  return moved?.job ?? null;
}

function reportTransition(deps: Pick<AppDeps, "telemetry">, moved: Transitioned | null) {
  if (moved && moved.from !== moved.job.status) deps.telemetry.videoTransition({ jobId: moved.job.id, model: moved.job.model, from: moved.from, to: moved.job.status, accountId: moved.job.accountId });
}

const clearLease = sql`lease_owner = NULL, lease_expires_at = NULL`;
type EventDeps = Pick<AppDeps, "config">;

/** The webhook event this change is, queued in its transaction (webhooks/outbox.ts says why first). */
function enqueueEvent(deps: EventDeps, tx: Tx, job: MovedJob) {
  if (job.status !== "processing" && job.status !== "completed" && job.status !== "failed") throw new Error(`no event for status ${job.status}`);
  return enqueueJobEvent(tx, {
    jobId: job.id, accountId: job.accountId, webhookUrl: job.webhookUrl, type: eventTypeFor(job.status, job.errorCode),
    data: jobEventData(job, deps.config.publicUrl ?? job.linksBase),
  }, { retryWindowMs: deps.config.webhooks.retryWindowMs });
}

/**
 * Save the provider's handle, right after it accepted the job: processing (first time), or still
 * processing (a resubmit after a lost handle); the first time, the `.processing` event is queued in
 * the same transaction. Null when the job ended or changed hands meanwhile (cancel, lease lost).
 */
export async function saveHandle(deps: Pick<AppDeps, "database" | "telemetry" | "config">, id: string, owner: string, handle: string): Promise<Transitioned | null> {
  const moved = await deps.database.db.transaction(async (tx) => {
    const m = await transition(tx, id, "processing", {
      stay: true,
      set: sql`plugin_handle = ${handle}, started_at = coalesce(started_at, now()), error_streak = 0, progress = NULL`,
      guard: sql`v.lease_owner = ${owner} AND v.plugin_handle IS NULL`,
    });
    if (m?.from === "queued") await enqueueEvent(deps, tx, m.job);
    return m;
  });
  reportTransition(deps, moved);
  return moved;
}

/**
 * completed (its MP4 and stills already in the blob store `result.blobStore`) + hold settled for
 * exactly the held amount (price/s × seconds, fixed at submit) + usage row, in one transaction.
 * False when the job had already ended (cancel, another instance): then nothing is charged.
 */
export async function completeJob(
  deps: Pick<AppDeps, "database" | "telemetry" | "config">, id: string,
  result: { blobStore: string; size: number; variants: string[] }, extra: { plugin: string },
): Promise<boolean> {
  let done: Transitioned | null = null;
  let charge: JobCharge | null = null;
  await deps.database.db.transaction(async (tx) => {
    done = await transition(tx, id, "completed", {
      set: sql`blob_store = ${result.blobStore}, result_size = ${result.size}, variants = ${`{${result.variants.join(",")}}`}::text[], progress = 1, completed_at = now(),
        expires_at = now() + ${deps.config.videoRetentionMs} * interval '1 millisecond', error_code = NULL, error_message = NULL, ${clearLease}`,
    });
    if (!done) return;
    // the outbox row first: billing's account lock is then held no longer than the money part needs (webhooks/outbox.ts)
    await enqueueEvent(deps, tx, done.job);
    charge = chargeOf(deps, done.job, extra.plugin);
    await charge.settle(tx);
  });
  const moved = done as Transitioned | null;
  if (!moved) return false;
  reportTransition(deps, moved);
  (charge as JobCharge | null)?.report();
  return true;
}

/** failed + error + hold released + usage row with cost 0, in one transaction. Failed jobs are never charged. */
export async function failJob(deps: Pick<AppDeps, "database" | "telemetry" | "config">, id: string, error: { code: string; message: string }, extra: { plugin: string | null; guard?: SQL; alsoInTx?: (tx: Tx, job: MovedJob) => Promise<void> }): Promise<MovedJob | null> {
  const moved = await deps.database.db.transaction(async (tx) => {
    const m = await transition(tx, id, "failed", {
      set: sql`error_code = ${error.code}, error_message = ${error.message.slice(0, 1000)}, completed_at = now(), ${clearLease}`,
      guard: extra.guard,
    });
    if (!m) return null;
    await enqueueEvent(deps, tx, m.job);
    await chargeOf(deps, m.job, extra.plugin).release(tx, { errorCode: error.code, status: error.code === "cancelled" ? 499 : 500 });
    await extra.alsoInTx?.(tx, m.job);
    return m;
  });
  reportTransition(deps, moved);
  return moved?.job ?? null;
}

function chargeOf(deps: Pick<AppDeps, "telemetry">, job: MovedJob, plugin: string | null): JobCharge {
  return jobCharge(deps, { holdId: job.holdId, jobId: job.id, accountId: job.accountId, keyId: job.keyId, model: job.model, seconds: job.seconds, priceBasis: job.priceBasis, route: job.route, plugin, createdAt: job.createdAt });
}
