/** Reads of video_jobs for clients (poll, list, events, content) and submit's counts: one function per statement. */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../../../db/index.ts";
import { ACTIVE_VIDEO_JOB_STATUSES, statusIn } from "../../../db/schema/index.ts";
import { columns, readRow, VIEW_COLUMNS, type JobView } from "./columns.ts";

const OWN_COLUMNS = [...VIEW_COLUMNS, "requestHash"] as const;
/** A job as its owner may read it; `result` only while it is kept (completed, before expires_at). */
export type OwnJob = JobView & { requestHash: string | null; result: Uint8Array | null };

/** The job if it belongs to `accountId`; null otherwise (another account's job does not exist for you). */
export async function findJob(tx: Tx, id: string, accountId: string, opts: { withResult: boolean }): Promise<OwnJob | null> {
  const rows = await query<Record<string, unknown>>(tx, sql`
    SELECT ${columns(OWN_COLUMNS)}${opts.withResult ? sql`, CASE WHEN ${statusIn(["completed"])} AND expires_at > now() THEN result END AS result` : sql``}
    FROM video_jobs WHERE id = ${id} AND account_id = ${accountId}`);
  const r = rows[0];
  return r ? { ...readRow(r, OWN_COLUMNS), result: opts.withResult ? readRow(r, ["result"]).result : null } : null;
}

/** The job an Idempotency-Key already made for this account, if any. */
export async function findJobByIdempotencyKey(tx: Tx, accountId: string, key: string): Promise<OwnJob | null> {
  const rows = await query<Record<string, unknown>>(tx, sql`
    SELECT ${columns(OWN_COLUMNS)} FROM video_jobs WHERE account_id = ${accountId} AND idempotency_key = ${key}`);
  return rows[0] ? { ...readRow(rows[0], OWN_COLUMNS), result: null } : null;
}

/** Own jobs, newest first, `limit + 1` of them (the extra one says there is a next page). */
export async function listAccountJobs(tx: Tx, accountId: string, page: { limit: number; after?: string }): Promise<JobView[]> {
  const rows = await query<Record<string, unknown>>(tx, sql`
    SELECT ${columns(VIEW_COLUMNS)} FROM video_jobs
    WHERE account_id = ${accountId}
      ${page.after ? sql`AND (created_at, id) < (SELECT created_at, id FROM video_jobs WHERE id = ${page.after} AND account_id = ${accountId})` : sql``}
    ORDER BY created_at DESC, id DESC LIMIT ${page.limit + 1}`);
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

export interface ContentMeta {
  status: JobView["status"];
  size: number | null;
  expiresAt: Date | null;
  completedAt: Date | null;
}

/** What the content route needs before sending a byte: state, size, expiry (no video bytes). */
export async function readContentMeta(tx: Tx, id: string, accountId: string): Promise<ContentMeta | null> {
  const rows = await query<Record<string, unknown>>(tx, sql`
    SELECT status, octet_length(result) AS size, expires_at, completed_at FROM video_jobs WHERE id = ${id} AND account_id = ${accountId}`);
  const r = rows[0];
  return r ? { ...readRow(r, ["status", "expiresAt", "completedAt"]), size: r.size === null ? null : Number(r.size) } : null;
}

/** Bytes [start, start + length) of the job's video; null once it is gone (expired meanwhile). */
export async function readContentSlice(tx: Tx, id: string, start: number, length: number): Promise<Uint8Array | null> {
  const rows = await query<{ part: Uint8Array | null }>(tx, sql`
    SELECT substring(result FROM ${start + 1} FOR ${length}) AS part FROM video_jobs WHERE id = ${id} AND ${statusIn(["completed"])} AND expires_at > now()`);
  const part = rows[0]?.part;
  return part ? new Uint8Array(part) : null;
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
