/**
 * POST /v1/videos/generations/{id}/cancel: the job fails with code `cancelled` and its hold is
 * released in one transaction; then the provider is asked to stop (best effort, after the commit,
 * so a slow provider cannot hold the row lock). The instance running the job notices at its next
 * lease renewal and stops polling.
 */
import { sql } from "drizzle-orm";
import type { AppDeps } from "../../deps.ts";
import { ApiError } from "../../errors.ts";
import { findJob } from "./job-table/read-jobs.ts";
import { failJob } from "./job-table/transitions.ts";
import { getVideo, jobNotFound } from "./poll.ts";

const CANCEL_TIMEOUT_MS = 10_000;

export async function cancelVideo(deps: AppDeps, id: string, accountId: string) {
  const db = deps.database.db;
  const job = await failJob(deps, id, { code: "cancelled", message: "The job was cancelled by the client." }, { plugin: null, guard: sql`v.account_id = ${accountId}` });
  if (job?.pluginHandle) {
    const video = deps.registry.get(job.model)?.instance.video;
    await video?.cancel?.(job.pluginHandle, { signal: AbortSignal.timeout(CANCEL_TIMEOUT_MS), requestId: id }).catch((err) => {
      deps.logger.warn({ err, jobId: id }, "provider cancel failed; the job is cancelled here regardless");
    });
  }
  if (job) return getVideo(db, id, accountId);
  const current = await findJob(db, id, accountId, { withResult: false });
  if (!current) throw jobNotFound(id);
  if (current.status === "failed" && current.errorCode === "cancelled") return getVideo(db, id, accountId);
  throw new ApiError(409, "conflict_error", `Video job '${id}' is already ${current.status} and cannot be cancelled.`, { code: "job_not_cancellable" });
}
