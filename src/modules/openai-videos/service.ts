/**
 * OpenAI's Videos API over the video job table: the same jobs, charges, webhooks, events and
 * retention as /v1/videos/generations (a job made through either is read through both, same id).
 */
import type { Principal } from "../../auth/authenticate-key.ts";
import { isBlobStoreError, readAll } from "../../blob-store/index.ts";
import type { AppDeps } from "../../deps.ts";
import { ApiError, badRequest } from "../../errors.ts";
import { allKeys, sourceKey } from "../videos/blob-keys.ts";
import { cancelJob } from "../videos/cancel.ts";
import { findJob, listAccountJobs } from "../videos/job-table/read-jobs.ts";
import { expireNow } from "../videos/job-table/transitions.ts";
import { isExpired, jobNotFound, videoExpired } from "../videos/poll.ts";
import { storageUnavailable, submitVideo } from "../videos/submit.ts";
import { presentVideo } from "./present.ts";

/** what openai-poll-after-ms says while a job runs: the model's own poll interval, within these bounds */
const POLL_AFTER_MS = { min: 250, max: 5_000, fallback: 1_000 };

export async function retrieveVideo(deps: AppDeps, id: string, accountId: string) {
  const job = await findJob(deps.database.db, id, accountId);
  if (!job) throw jobNotFound(id);
  if (job.status === "completed" && isExpired(job)) throw videoExpired(id);
  if (job.status === "expired") throw videoExpired(id);
  return { video: presentVideo(job), pollAfterMs: job.status === "queued" || job.status === "processing" ? pollAfter(deps, job.model) : null };
}

function pollAfter(deps: AppDeps, model: string): number {
  const ms = deps.registry.get(model)?.instance.video?.pollIntervalMs ?? POLL_AFTER_MS.fallback;
  return Math.min(POLL_AFTER_MS.max, Math.max(POLL_AFTER_MS.min, ms));
}

export async function listOpenAiVideos(deps: AppDeps, accountId: string, page: { limit: number; after?: string; order: "asc" | "desc" }) {
  const rows = await listAccountJobs(deps.database.db, accountId, page);
  const data = rows.slice(0, page.limit).map(presentVideo);
  return { object: "list" as const, data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: rows.length > page.limit };
}

/**
 * DELETE: a job still queued or running is cancelled (its hold released, nothing charged); a
 * completed one expires now. Its objects are deleted at once when the store answers, else by the
 * retention sweep. Deleting again is fine.
 */
export async function deleteVideo(deps: AppDeps, id: string, accountId: string) {
  const outcome = await cancelJob(deps, id, accountId);
  if (outcome !== "cancelled" && outcome.status === "completed") await expireNow(deps, id, accountId);
  const job = await findJob(deps.database.db, id, accountId);
  const store = job?.blobStore ? deps.blobs.byName(job.blobStore) : null;
  // the sweep forgets them (job-table/stored-objects.ts); deleting twice is harmless
  if (store && job && job.status !== "queued" && job.status !== "processing") await store.delete(allKeys(id)).catch(() => {});
  return { id, object: "video.deleted" as const, deleted: true as const };
}

/** POST /v1/videos/{id}/remix: a new job of the same model, size and length from the same source image, if the model can remix. */
export async function remixVideo(deps: AppDeps, principal: Principal, id: string, prompt: string, idempotencyKey: string | null, origin: string, traceparent?: string) {
  const job = await findJob(deps.database.db, id, principal.accountId);
  if (!job) throw jobNotFound(id);
  const model = deps.registry.get(job.model);
  if (!model?.video?.remix) {
    throw badRequest(`The model '${job.model}' cannot remix videos: its plugin does not declare remix. Create a new video with POST /v1/videos instead.`, "video_id", "remix_not_supported");
  }
  if (isExpired(job)) throw videoExpired(id);
  if (job.status !== "completed") throw new ApiError(409, "invalid_request_error", `Video '${id}' is ${job.status}; only a completed video can be remixed.`, { code: "video_not_ready" });
  const store = job.blobStore ? deps.blobs.byName(job.blobStore) : null;
  return submitVideo(deps, principal, {
    model: job.model, prompt, seconds: job.seconds, size: `${job.width}x${job.height}`, remixedFrom: id,
    image: async () => {
      const bytes = store ? await readAll(store, sourceKey(id)).catch((e) => {
        throw isBlobStoreError(e) ? storageUnavailable(e) : e;
      }) : null;
      if (!bytes || !job.imageMime) throw videoExpired(id);
      return { bytes, mime: job.imageMime };
    },
    imageField: { param: "video_id", hint: "a video that still has its source image" },
    fingerprint: ["remix", id, prompt],
    defaults: { seconds: job.seconds, size: `${job.width}x${job.height}` },
    route: "/v1/videos/{id}/remix", traceparent,
  }, idempotencyKey, origin);
}
