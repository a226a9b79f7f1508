/** GET /v1/videos/generations/{id} and the list: a job as its owner sees it. */
import { isBlobStoreError, readAll } from "../../blob-store/index.ts";
import type { Tx } from "../../db/index.ts";
import type { AppDeps } from "../../deps.ts";
import { ApiError, notFound } from "../../errors.ts";
import { videoKey } from "./blob-keys.ts";
import type { JobView } from "./job-table/columns.ts";
import { findJob, listAccountJobs, type OwnJob } from "./job-table/read-jobs.ts";
import type { VideoJob } from "./model.ts";
import { storageUnavailable } from "./submit.ts";

const unix = (d: Date) => Math.floor(d.getTime() / 1000);

export const videoExpired = (id: string) =>
  new ApiError(410, "invalid_request_error", `The result of video job '${id}' has expired and was deleted. Submit the job again.`, { code: "video_expired" });

export const jobNotFound = (id: string) => notFound(`No video job '${id}'.`, "video_not_found", "id");

/** expired, or past its deadline (the sweeper runs every few seconds; the deadline is what counts) */
export const isExpired = (job: Pick<OwnJob, "status" | "expiresAt">) => job.status === "expired" || (job.status === "completed" && (!job.expiresAt || job.expiresAt <= new Date()));

/** The job (404 when it is not this account's, 410 past retention), and for a completed job its MP4 from the blob store. */
export async function getVideo(deps: Pick<AppDeps, "database" | "blobs">, id: string, accountId: string): Promise<VideoJob> {
  const job = await findJob(deps.database.db, id, accountId);
  if (!job) throw jobNotFound(id);
  if (isExpired(job)) throw videoExpired(id);
  if (job.status !== "completed") return present(job);
  const store = job.blobStore ? deps.blobs.byName(job.blobStore) : null;
  if (!store) throw videoExpired(id);
  const mp4 = await readAll(store, videoKey(id)).catch((e) => {
    throw isBlobStoreError(e) ? storageUnavailable(e) : e;
  });
  if (!mp4) throw videoExpired(id); // swept a moment ago
  return present(job, mp4);
}

/** The polling view of a job; `result` (the MP4) only when given. */
export function present(job: JobView, result: Uint8Array | null = null): VideoJob {
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
    if (result) out.data = [{ b64_json: Buffer.from(result.buffer, result.byteOffset, result.byteLength).toString("base64"), format: "mp4" }];
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
