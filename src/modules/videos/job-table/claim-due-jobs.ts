/**
 * Job claims and leases: one exported function per statement.
 *
 * A claim is ONE statement: the inner SELECT … FOR UPDATE SKIP LOCKED picks due rows no other
 * transaction is claiming right now, the outer UPDATE stamps our lease on them. Two instances
 * claiming at the same moment get disjoint sets without waiting on each other. A lease that ran out
 * (its instance died or stalled past `schedulerLeaseMs`) makes the row claimable again.
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../../../db/index.ts";
import type { ImageMime } from "../../../media/index.ts";

export interface ClaimedJob {
  id: string;
  accountId: string;
  model: string;
  status: "queued" | "processing";
  prompt: string;
  negativePrompt: string | null;
  seed: number;
  steps: number | null;
  seconds: number;
  width: number;
  height: number;
  /** kept until the job ends: a lost handle means submitting again */
  image: Uint8Array | null;
  imageMime: ImageMime | null;
  pluginHandle: string | null;
  attempts: number;
  errorStreak: number;
  /** the last retryable error, kept for the final message */
  lastError: string | null;
  progress: number | null;
}

export async function claimDueJobs(tx: Tx, opts: { owner: string; leaseMs: number; model: string; limit: number }): Promise<ClaimedJob[]> {
  if (opts.limit <= 0) return [];
  const rows = await query<Record<string, any>>(tx, sql`
    UPDATE video_jobs SET lease_owner = ${opts.owner}, lease_expires_at = now() + ${opts.leaseMs} * interval '1 millisecond'
    WHERE id IN (
      SELECT id FROM video_jobs
      WHERE status IN ('queued', 'processing') AND next_run_at <= now() AND model = ${opts.model}
        AND (lease_expires_at IS NULL OR lease_expires_at < now())
      ORDER BY next_run_at
      LIMIT ${opts.limit}
      FOR UPDATE SKIP LOCKED
    )
    RETURNING id, account_id, model, status, prompt, negative_prompt, seed, steps, seconds, width, height,
      image, image_mime, plugin_handle, attempts, error_streak, error_message, progress`);
  return rows.map((r) => ({
    id: r.id,
    accountId: r.account_id,
    model: r.model,
    status: r.status,
    prompt: r.prompt,
    negativePrompt: r.negative_prompt,
    seed: Number(r.seed),
    steps: r.steps === null ? null : Number(r.steps),
    seconds: Number(r.seconds),
    width: Number(r.width),
    height: Number(r.height),
    image: r.image ? new Uint8Array(r.image) : null,
    imageMime: r.image_mime,
    pluginHandle: r.plugin_handle,
    attempts: Number(r.attempts),
    errorStreak: Number(r.error_streak),
    lastError: r.error_message,
    progress: r.progress === null ? null : Number(r.progress),
  }));
}

/** Models that have due, unleased jobs (so an idle scheduler claims only for models with work). */
export async function modelsWithDueJobs(tx: Tx): Promise<string[]> {
  const rows = await query<{ model: string }>(tx, sql`
    SELECT DISTINCT model FROM video_jobs
    WHERE status IN ('queued', 'processing') AND next_run_at <= now() AND (lease_expires_at IS NULL OR lease_expires_at < now())`);
  return rows.map((r) => r.model);
}

/** Extend our leases on the jobs we are running; returns the ids still ours and still active. */
export async function renewLeases(tx: Tx, owner: string, ids: string[], leaseMs: number): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await query<{ id: string }>(tx, sql`
    UPDATE video_jobs SET lease_expires_at = now() + ${leaseMs} * interval '1 millisecond'
    WHERE id IN (${sql.join(ids.map((id) => sql`${id}`), sql`, `)}) AND lease_owner = ${owner} AND status IN ('queued', 'processing')
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
    UPDATE video_jobs SET lease_owner = NULL, lease_expires_at = NULL WHERE lease_owner = ${owner} AND status IN ('queued', 'processing') RETURNING id`);
  return rows.length;
}

/**
 * Count a submit attempt before calling the provider, only while we hold the lease and no handle is
 * saved: a second instance that somehow holds a stale copy cannot pass this and submit again.
 */
export async function beginSubmitAttempt(tx: Tx, id: string, owner: string): Promise<number | null> {
  const rows = await query<{ attempts: number }>(tx, sql`
    UPDATE video_jobs SET attempts = attempts + 1
    WHERE id = ${id} AND lease_owner = ${owner} AND lease_expires_at > now() AND plugin_handle IS NULL AND status IN ('queued', 'processing')
    RETURNING attempts`);
  return rows[0] ? Number(rows[0].attempts) : null;
}

export async function saveProgress(tx: Tx, id: string, owner: string, progress: number) {
  await query(tx, sql`UPDATE video_jobs SET progress = ${progress}, error_streak = 0 WHERE id = ${id} AND lease_owner = ${owner} AND status = 'processing'`);
}
