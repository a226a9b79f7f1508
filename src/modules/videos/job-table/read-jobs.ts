/** Reads of video_jobs for clients (poll, list, events, content) and submit's counts: one function per statement. */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../../../db/index.ts";
import { ACTIVE_VIDEO_JOB_STATUSES, statusIn } from "../../../db/schema/index.ts";
import { columns, readRow, VIEW_COLUMNS, type JobView, type VideoJobRow } from "./columns.ts";

const OWN_COLUMNS = [...VIEW_COLUMNS, "requestHash", "blobStore", "resultSize", "variants", "imageMime"] as const;
/** A job as its owner may read it, with where its objects are (blob_store) and which exist. */
export type OwnJob = Pick<VideoJobRow, (typeof OWN_COLUMNS)[number]>;

/** The job if it belongs to `accountId`; null otherwise (another account's job does not exist for you). */
export async function findJob(tx: Tx, id: string, accountId: string): Promise<OwnJob | null> {
  const rows = await query<Record<string, unknown>>(tx, sql`
    SELECT ${columns(OWN_COLUMNS)} FROM video_jobs WHERE id = ${id} AND account_id = ${accountId}`);
  return rows[0] ? readRow(rows[0], OWN_COLUMNS) : null;
}

/** The job an Idempotency-Key already made for this account, if any. */
export async function findJobByIdempotencyKey(tx: Tx, accountId: string, key: string): Promise<OwnJob | null> {
  const rows = await query<Record<string, unknown>>(tx, sql`
    SELECT ${columns(OWN_COLUMNS)} FROM video_jobs WHERE account_id = ${accountId} AND idempotency_key = ${key}`);
  return rows[0] ? readRow(rows[0], OWN_COLUMNS) : null;
}

/** Own jobs, newest first (or oldest first), `limit + 1` of them (the extra one says there is a next page). */
export async function listAccountJobs(tx: Tx, accountId: string, page: { limit: number; after?: string; order?: "asc" | "desc" }): Promise<JobView[]> {
  const asc = page.order === "asc";
  const rows = await query<Record<string, unknown>>(tx, sql`
    SELECT ${columns(VIEW_COLUMNS)} FROM video_jobs
    WHERE account_id = ${accountId}
      ${page.after ? sql`AND (created_at, id) ${sql.raw(asc ? ">" : "<")} (SELECT created_at, id FROM video_jobs WHERE id = ${page.after} AND account_id = ${accountId})` : sql``}
    ORDER BY ${sql.raw(asc ? "created_at ASC, id ASC" : "created_at DESC, id DESC")} LIMIT ${page.limit + 1}`);
  return rows.map((r) => readRow(r, VIEW_COLUMNS));
}

const WATCHED_COLUMNS = [...VIEW_COLUMNS, "accountId", "linksBase"] as const;
export type WatchedJob = JobView & { accountId: string; linksBase: string | null };

/** One statement for any number of ids: one text parameter, so the prepared statement is reused. */
export async function readWatchedJobs(tx: Tx, ids: readonly string[]): Promise<WatchedJob[]> {
  // job ids are "vid_" + base62; anything else (a comma would split into two ids) names no job
  ids = ids.filter((id) => /^[A-Za-z0-9_]+$/.test(id));
  if (ids.length === 0) return [];
  const rows = await query<Record<string, unknown>>(tx, sql`
    SELECT ${columns(WATCHED_COLUMNS)} FROM video_jobs WHERE id = ANY (string_to_array(${ids.join(",")}, ','))`);
  return rows.map((r) => readRow(r, WATCHED_COLUMNS));
}

export type ContentMeta = Pick<VideoJobRow, "status" | "resultSize" | "expiresAt" | "completedAt" | "blobStore" | "variants" | "width" | "height">;

/** What /content needs to answer: status, size, deadline and where the objects are. */
export async function readContentMeta(tx: Tx, id: string, accountId: string): Promise<ContentMeta | null> {
  const keys = ["status", "resultSize", "expiresAt", "completedAt", "blobStore", "variants", "width", "height"] as const;
  const rows = await query<Record<string, unknown>>(tx, sql`SELECT ${columns(keys)} FROM video_jobs WHERE id = ${id} AND account_id = ${accountId}`);
  return rows[0] ? readRow(rows[0], keys) : null;
}

/** Jobs of this API key not yet final (the per-key concurrent-jobs limit; on video_jobs_active_key_idx). */
export async function countActiveJobsOfKey(tx: Tx, keyId: string): Promise<number> {
  const [row] = await query<{ n: number }>(tx, sql`SELECT count(*)::int AS n FROM video_jobs WHERE key_id = ${keyId} AND ${statusIn(ACTIVE_VIDEO_JOB_STATUSES)}`);
  return Number(row?.n ?? 0);
}

/** Queued jobs of a model, counted up to `upTo` only (a bound check need not count a long queue). */
export async function countQueuedJobs(tx: Tx, model: string, upTo: number): Promise<number> {
  const [row] = await query<{ n: number }>(tx, sql`
    SELECT count(*)::int AS n FROM (SELECT 1 FROM video_jobs WHERE model = ${model} AND ${statusIn(["queued"])} LIMIT ${upTo}) q`);
  return Number(row?.n ?? 0);
}
