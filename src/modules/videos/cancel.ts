/**
 * Cancelling a job (POST /v1/videos/generations/{id}/cancel, DELETE /v1/videos/{id} of a running
 * job): the job fails with code `cancelled` and its hold is released in one transaction; then the
 * provider is asked to stop (best effort, after the commit, so a slow provider cannot hold the row
 * lock). The instance running the job notices at its next lease renewal and stops polling.
 */
import { sql } from "drizzle-orm";
import type { AppDeps } from "../../deps.ts";
import type { Tx } from "../../db/index.ts";
import { ApiError } from "../../errors.ts";
import { findJob, type OwnJob } from "./job-table/read-jobs.ts";
import { failJob } from "./job-table/transitions.ts";
import { getVideo, jobNotFound } from "./poll.ts";

const CANCEL_TIMEOUT_MS = 10_000;

/** Cancel; the job as it is afterwards. 404 for no such job, 409 when it already ended otherwise. */
/** `alsoInTx`: what commits with the cancellation or not at all (an operator's audit-log row) */
export async function cancelVideo(deps: AppDeps, id: string, accountId: string, alsoInTx?: (tx: Tx) => Promise<void>) {
  const outcome = await cancelJob(deps, id, accountId, alsoInTx);
  if (outcome === "cancelled" || outcome.status === "failed" && outcome.errorCode === "cancelled") return getVideo(deps, id, accountId);
  throw new ApiError(409, "conflict_error", `Video job '${id}' is already ${outcome.status} and cannot be cancelled.`, { code: "job_not_cancellable" });
}

/** "cancelled" when this call cancelled it; otherwise the job as it is (already final). 404 for no such job. */
export async function cancelJob(deps: AppDeps, id: string, accountId: string, alsoInTx?: (tx: Tx) => Promise<void>): Promise<"cancelled" | OwnJob> {
  const job = await failJob(deps, id, { code: "cancelled", message: "The job was cancelled by the client." }, { plugin: null, guard: sql`v.account_id = ${accountId}`, alsoInTx });
  if (job?.pluginHandle) {
    const video = deps.registry.get(job.model)?.instance.video;
    await video?.cancel?.(job.pluginHandle, { signal: AbortSignal.timeout(CANCEL_TIMEOUT_MS), requestId: id }).catch((err) => {
      deps.logger.warn({ err, jobId: id }, "provider cancel failed; the job is cancelled here regardless");
    });
  }
  if (job) return "cancelled";
  const current = await findJob(deps.database.db, id, accountId);
  if (!current) throw jobNotFound(id);
  return current;
}
