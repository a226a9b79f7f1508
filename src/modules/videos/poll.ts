/** GET /v1/videos/generations/{id} and the list: a job as its owner sees it. */
import type { Tx } from "../../db/index.ts";
import { ApiError, notFound } from "../../errors.ts";
import type { JobView } from "./job-table/columns.ts";
import { findJob, listAccountJobs } from "./job-table/read-jobs.ts";
import type { VideoJob } from "./model.ts";

const unix = (d: Date) => Math.floor(d.getTime() / 1000);

export const videoExpired = (id: string) =>
  new ApiError(410, "invalid_request_error", `The result of video job '${id}' has expired and was deleted. Submit the job again.`, { code: "video_expired" });

export const jobNotFound = (id: string) => notFound(`No video job '${id}'.`, "video_not_found", "id");

export async function getVideo(tx: Tx, id: string, accountId: string): Promise<VideoJob> {
  const job = await findJob(tx, id, accountId, { withResult: true });
  if (!job) throw jobNotFound(id);
  // the sweeper runs every few seconds; the deadline is what counts, not whether it has run yet
  if (job.status === "expired" || (job.status === "completed" && (!job.result || (job.expiresAt && job.expiresAt <= new Date())))) throw videoExpired(id);
  return present(job);
}

/** The polling view of a job; `result` (the MP4) only when given. */
export function present(job: JobView & { result?: Uint8Array | null }): VideoJob {
  const out: VideoJob = {
    id: job.id,
    object: "video.generation",
    status: job.status === "expired" ? "completed" : job.status,
    model: job.model,
    seconds: job.seconds,
    size: `${job.width}x${job.height}`,
    seed: job.seed,
    created_at: unix(job.createdAt),
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
  const rows = await listAccountJobs(tx, accountId, page);
  const data = rows.slice(0, page.limit).map((job) => ({ ...present(job), status: job.status }));
  return { object: "list" as const, data, has_more: rows.length > page.limit, last_id: data.at(-1)?.id ?? null };
}
