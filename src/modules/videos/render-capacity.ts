/**
 * The bound on a video model's queue: jobs waiting for a slot, counted in Postgres, so the bound
 * holds for all instances together. Past `maxQueued` a submit gets 503 + Retry-After at once
 * rather than a job that waits for an unbounded time. Concurrent submits of different keys may
 * overshoot by the number racing at that moment (the count is not locked: a soft bound).
 */
import type { Tx } from "../../db/index.ts";
import { ApiError } from "../../errors.ts";
import type { RegisteredModel } from "../../registry/model-registry.ts";
import { countQueuedJobs } from "./job-table/read-jobs.ts";

/** a preview render of a 5 s clip takes ~2 s of one slot (bench/preview-render.ts) */
const SECONDS_PER_QUEUED_JOB = 2;

export async function assertRenderCapacity(db: Tx, model: RegisteredModel): Promise<void> {
  const video = model.instance.video!;
  const max = video.maxQueued;
  if (max === undefined) return;
  const n = await countQueuedJobs(db, model.id, max);
  if (n < max) return;
  const retryAfter = Math.min(120, Math.max(1, Math.ceil((n * SECONDS_PER_QUEUED_JOB) / (video.maxConcurrency ?? 1))));
  throw new ApiError(503, "service_unavailable", `The model '${model.id}' has ${n} jobs waiting, its limit; retry in about ${retryAfter} s.`, {
    code: "model_overloaded",
    headers: { "retry-after": String(retryAfter) },
  });
}
