/**
 * The queries behind the database gauges of /metrics, run once per scrape. Each stays on a partial
 * index (video_jobs_due_idx: status IN ('queued','processing'); holds_account_open_idx: state = 'open'),
 * so its cost grows with the live queue and open holds, not with the history kept in those tables.
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../db/index.ts";
import { ACTIVE_VIDEO_JOB_STATUSES, statusIn } from "../db/schema/index.ts";

export interface VideoQueueGauges {
  queued: number;
  processing: number;
  oldestQueuedAgeSeconds: number;
  /** the oldest due job that no live lease covers: how far the schedulers are behind */
  schedulerLagSeconds: number;
}

export async function videoQueue(db: Tx): Promise<VideoQueueGauges> {
  const [row] = await query<Record<string, unknown>>(db, sql`
    SELECT count(*) FILTER (WHERE ${statusIn(["queued"])}) AS queued,
           count(*) FILTER (WHERE ${statusIn(["processing"])}) AS processing,
           coalesce(extract(epoch FROM now() - min(created_at) FILTER (WHERE ${statusIn(["queued"])})), 0) AS oldest_queued,
           coalesce(extract(epoch FROM now() - min(next_run_at) FILTER (
             WHERE next_run_at <= now() AND (lease_expires_at IS NULL OR lease_expires_at < now())
           )), 0) AS scheduler_lag
    FROM video_jobs
    WHERE ${statusIn(ACTIVE_VIDEO_JOB_STATUSES)}`);
  return {
    queued: Number(row?.queued ?? 0),
    processing: Number(row?.processing ?? 0),
    oldestQueuedAgeSeconds: Math.max(0, Number(row?.oldest_queued ?? 0)),
    schedulerLagSeconds: Math.max(0, Number(row?.scheduler_lag ?? 0)),
  };
}

export async function openHolds(db: Tx): Promise<{ count: number; micros: number }> {
  const [row] = await query<Record<string, unknown>>(db, sql`
    SELECT count(*) AS count, coalesce(sum(amount), 0) AS micros FROM holds WHERE state = 'open'`);
  return { count: Number(row?.count ?? 0), micros: Number(row?.micros ?? 0) };
}
