/** GET /v1/videos/generations/{id} and the list: a job as its owner sees it. */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../../db/index.ts";
import { ApiError, notFound } from "../../errors.ts";
import type { VideoJob } from "./model.ts";

export interface JobRow {
  id: string;
  model: string;
  status: "queued" | "processing" | "completed" | "failed" | "expired";
  seconds: number;
  width: number;
  height: number;
  seed: number;
  progress: number | null;
  errorCode: string | null;
  errorMessage: string | null;
  result: Uint8Array | null;
  requestHash: string | null;
  pluginHandle: string | null;
  createdAtUnix: number;
  expiresAt: Date | null;
}

const unix = (d: Date) => Math.floor(d.getTime() / 1000);

export function toRow(r: Record<string, any>): JobRow {
  return {
    id: r.id,
    model: r.model,
    status: r.status,
    seconds: Number(r.seconds),
    width: Number(r.width),
    height: Number(r.height),
    seed: Number(r.seed),
    progress: r.progress === null ? null : Number(r.progress),
    errorCode: r.error_code,
    errorMessage: r.error_message,
    result: r.result ?? null,
    requestHash: r.request_hash,
    pluginHandle: r.plugin_handle,
    createdAtUnix: unix(new Date(r.created_at)),
    expiresAt: r.expires_at ? new Date(r.expires_at) : null,
  };
}

export const COLUMNS = sql`id, model, status, seconds, width, height, seed, progress, error_code, error_message, request_hash, plugin_handle, created_at, expires_at`;

/** The job if it belongs to `accountId`; null otherwise (another account's job does not exist for you). */
export async function loadJob(tx: Tx, id: string, accountId: string, opts: { withResult: boolean }): Promise<JobRow | null> {
  const rows = await query<Record<string, any>>(tx, sql`
    SELECT ${COLUMNS}${opts.withResult ? sql`, CASE WHEN status = 'completed' AND expires_at > now() THEN result END AS result` : sql``}
    FROM video_jobs WHERE id = ${id} AND account_id = ${accountId}`);
  return rows[0] ? toRow(rows[0]) : null;
}

export const videoExpired = (id: string) =>
  new ApiError(410, "invalid_request_error", `The result of video job '${id}' has expired and was deleted. Submit the job again.`, { code: "video_expired" });

export const jobNotFound = (id: string) => notFound(`No video job '${id}'.`, "video_not_found", "id");

export async function getVideo(tx: Tx, id: string, accountId: string): Promise<VideoJob> {
  const job = await loadJob(tx, id, accountId, { withResult: true });
  if (!job) throw jobNotFound(id);
  // the sweeper runs every few seconds; the deadline is what counts, not whether it has run yet
  if (job.status === "expired" || (job.status === "completed" && (!job.result || (job.expiresAt && job.expiresAt <= new Date())))) throw videoExpired(id);
  return present(job);
}

export function present(job: JobRow): VideoJob {
  const out: VideoJob = {
    id: job.id,
    object: "video.generation",
    status: job.status === "expired" ? "completed" : job.status,
    model: job.model,
    seconds: job.seconds,
    size: `${job.width}x${job.height}`,
    seed: job.seed,
    created_at: job.createdAtUnix,
  };
  if ((job.status === "processing" || job.status === "queued") && job.progress !== null) out.progress = job.progress;
  if (job.status === "completed") {
    if (job.expiresAt) out.expires_at = unix(job.expiresAt);
    if (job.result) out.data = [{ b64_json: Buffer.from(job.result.buffer, job.result.byteOffset, job.result.byteLength).toString("base64"), format: "mp4" }];
  }
  if (job.status === "failed") out.error = { code: job.errorCode ?? "generation_failed", message: job.errorMessage ?? "The video generation failed." };
  return out;
}

/** Own jobs, newest first, without result bytes (poll one job for those). */
export async function listVideos(tx: Tx, accountId: string, page: { limit: number; after?: string }) {
  const rows = await query<Record<string, any>>(tx, sql`
    SELECT ${COLUMNS} FROM video_jobs
    WHERE account_id = ${accountId}
      ${page.after ? sql`AND (created_at, id) < (SELECT created_at, id FROM video_jobs WHERE id = ${page.after} AND account_id = ${accountId})` : sql``}
    ORDER BY created_at DESC, id DESC LIMIT ${page.limit + 1}`);
  const data = rows.slice(0, page.limit).map((r) => {
    const job = toRow(r);
    const { data: _omit, ...rest } = present({ ...job, result: null });
    return { ...rest, status: job.status };
  });
  return { object: "list" as const, data, has_more: rows.length > page.limit, last_id: data.at(-1)?.id ?? null };
}
