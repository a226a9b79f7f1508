/**
 * Job claims and leases: one exported function per statement.
 *
 * A claim is ONE statement: the inner SELECT … FOR UPDATE SKIP LOCKED picks due rows no other
 * transaction is claiming right now, the outer UPDATE stamps our lease on them. Two instances
 * claiming at the same moment get disjoint sets without waiting on each other. A lease that ran out
 * (its instance died or stalled past `schedulerLeaseMs`) makes the row claimable again.
 *
 * None of these changes a job's status (transitions.ts does, and only there); they move the lease,
 * the retry bookkeeping and the provider's handle of a job this instance holds.
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../../../db/index.ts";
import { ACTIVE_VIDEO_JOB_STATUSES, statusIn } from "../../../db/schema/index.ts";
import { columns, readRow, type VideoJobRow } from "./columns.ts";

const active = statusIn(ACTIVE_VIDEO_JOB_STATUSES);

/**
 * What the scheduler needs to run a job: the request, where its source image is (the blob store
 * keeps it until the job's objects are swept: a lost handle means submitting again), the saved
 * handle and the retry bookkeeping; `errorMessage` of an active job is its last retryable error,
 * kept for the final message.
 */
const CLAIMED_COLUMNS = [
  "id", "accountId", "model", "status", "prompt", "negativePrompt", "seed", "steps", "seconds", "width", "height",
  "imageMime", "blobStore", "remixedFrom", "pluginHandle", "attempts", "errorStreak", "errorMessage", "progress", "traceparent",
] as const;
export type ClaimedJob = Pick<VideoJobRow, (typeof CLAIMED_COLUMNS)[number]>;

export async function claimDueJobs(tx: Tx, opts: { owner: string; leaseMs: number; model: string; limit: number }): Promise<ClaimedJob[]> {
  if (opts.limit <= 0) return [];
  const rows = await query<Record<string, unknown>>(tx, sql`
    UPDATE video_jobs SET lease_owner = ${opts.owner}, lease_expires_at = now() + ${opts.leaseMs} * interval '1 millisecond'
    WHERE id IN (
      SELECT id FROM video_jobs
      WHERE ${active} AND next_run_at <= now() AND model = ${opts.model}
        AND (lease_expires_at IS NULL OR lease_expires_at < now())
      ORDER BY next_run_at
      LIMIT ${opts.limit}
      FOR UPDATE SKIP LOCKED
    )
    RETURNING ${columns(CLAIMED_COLUMNS)}`);
  return rows.map((r) => readRow(r, CLAIMED_COLUMNS));
}

/** Models that have due, unleased jobs (so an idle scheduler claims only for models with work). */
export async function modelsWithDueJobs(tx: Tx): Promise<string[]> {
  const rows = await query<{ model: string }>(tx, sql`
    SELECT DISTINCT model FROM video_jobs
    WHERE ${active} AND next_run_at <= now() AND (lease_expires_at IS NULL OR lease_expires_at < now())`);
  return rows.map((r) => r.model);
}

/** Extend our leases on the jobs we are running; returns the ids still ours and still active. */
export async function renewLeases(tx: Tx, owner: string, ids: string[], leaseMs: number): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await query<{ id: string }>(tx, sql`
    UPDATE video_jobs SET lease_expires_at = now() + ${leaseMs} * interval '1 millisecond'
    WHERE id IN (${sql.join(ids.map((id) => sql`${id}`), sql`, `)}) AND lease_owner = ${owner} AND ${active}
    RETURNING id`);
  return new Set(rows.map((r) => r.id));
}

/** Hand a job back to the queue, due again after `delayMs` (between retries, or on shutdown). */
export async function releaseJob(tx: Tx, id: string, owner: string, delayMs: number, more: { errorStreak?: number; clearHandle?: boolean; lastError?: string } = {}) {
  await query(tx, sql`
    UPDATE video_jobs SET lease_owner = NULL, lease_expires_at = NULL, next_run_at = now() + ${delayMs} * interval '1 millisecond'
      ${more.errorStreak !== undefined ? sql`, error_streak = ${more.errorStreak}` : sql``}
      ${more.clearHandle ? sql`, plugin_handle = NULL` : sql``}
      ${more.lastError !== undefined ? sql`, error_message = ${more.lastError.slice(0, 1000)}` : sql``}
    WHERE id = ${id} AND lease_owner = ${owner}`);
}

/** On shutdown: every job this instance holds becomes claimable at once (no waiting for lease expiry). */
export async function releaseAllLeases(tx: Tx, owner: string): Promise<number> {
  const rows = await query<{ id: string }>(tx, sql`
    UPDATE video_jobs SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = ${owner} AND ${active} RETURNING id`);
  return rows.length;
}

/**
 * Count a submit attempt before calling the provider, only while we hold the lease and no handle is
 * saved: a second instance that somehow holds a stale copy cannot pass this and submit again.
 */
export async function beginSubmitAttempt(tx: Tx, id: string, owner: string): Promise<number | null> {
  const rows = await query<{ attempts: number }>(tx, sql`
    UPDATE video_jobs SET attempts = attempts + 1
    WHERE id = ${id} AND lease_owner = ${owner} AND lease_expires_at > now() AND plugin_handle IS NULL AND ${active}
    RETURNING attempts`);
  return rows[0] ? Number(rows[0].attempts) : null;
}

export async function saveProgress(tx: Tx, id: string, owner: string, progress: number) {
  await query(tx, sql`UPDATE video_jobs SET progress = ${progress}, error_streak = 0 WHERE id = ${id} AND lease_owner = ${owner} AND ${statusIn(["processing"])}`);
}

/** The provider lost the job: forget its handle (only that one, only while ours), so the next round submits again. */
export async function forgetHandle(tx: Tx, id: string, owner: string, handle: string) {
  await query(tx, sql`UPDATE video_jobs SET plugin_handle = NULL WHERE id = ${id} AND lease_owner = ${owner} AND plugin_handle = ${handle}`);
}

/** The plugin handle of a job of this account (the job a remix remixes); null when it has none. */
export async function readHandle(tx: Tx, id: string): Promise<string | null> {
  const [row] = await query<{ plugin_handle: string | null }>(tx, sql`SELECT plugin_handle FROM video_jobs WHERE id = ${id}`);
  return row?.plugin_handle ?? null;
}
