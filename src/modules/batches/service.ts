/** Batches as the API shows them, and the create / cancel steps (the running is scheduler.ts's). */
import type { Principal } from "../../auth/authenticate-key.ts";
import type { AppDeps } from "../../deps.ts";
import { badRequest, notFound, quoted } from "../../errors.ts";
import { randomId } from "../../ids.ts";
import { findFile } from "../files/file-table.ts";
import { findBatch, insertBatch, lineCounts, requestCancel, type BatchRow } from "./batch-table.ts";
import { FINAL_BATCH_STATUSES, type CreateBatchBody } from "./model.ts";

/** "24h", the only completion window (OpenAI's) */
const WINDOW_MS = 24 * 3600 * 1000;

export const batchNotFound = (id: string) => notFound(`No such batch: ${quoted(id)}`, "batch_not_found", "batch_id");

const secs = (d: Date | null) => (d ? Math.floor(d.getTime() / 1000) : null);

/** OpenAI's batch object; a running batch's counts are read from its lines. */
export async function batchObject(deps: AppDeps, b: BatchRow) {
  const running = !FINAL_BATCH_STATUSES.includes(b.status) && b.status !== "validating";
  const counts = running ? await lineCounts(deps.database.db, b.id) : { completed: b.completed, failed: b.failed };
  return {
    id: b.id, object: "batch" as const, endpoint: b.endpoint,
    errors: b.errors ? { object: "list" as const, data: b.errors } : null,
    input_file_id: b.inputFileId, completion_window: b.completionWindow, status: b.status,
    output_file_id: b.outputFileId, error_file_id: b.errorFileId,
    created_at: secs(b.createdAt)!, in_progress_at: secs(b.inProgressAt), expires_at: secs(b.expiresAt), finalizing_at: secs(b.finalizingAt),
    completed_at: secs(b.completedAt), failed_at: secs(b.failedAt), expired_at: secs(b.expiredAt), cancelling_at: secs(b.cancellingAt), cancelled_at: secs(b.cancelledAt),
    request_counts: { total: b.total, completed: counts.completed, failed: counts.failed },
    metadata: b.metadata,
  };
}

/** traceparent: the creating request's (tracing on), so each line's span joins its trace */
export async function createBatch(deps: AppDeps, principal: Principal, body: CreateBatchBody, traceparent?: string): Promise<BatchRow> {
  const file = await findFile(deps.database.db, body.input_file_id, principal.accountId);
  if (!file) throw notFound(`No such File object: ${quoted(body.input_file_id)}`, "file_not_found", "input_file_id");
  if (file.purpose !== "batch") throw badRequest(`The file ${file.id} was uploaded with purpose '${file.purpose}'; a batch's input file needs purpose 'batch'.`, "input_file_id", "invalid_file");
  return insertBatch(deps.database.db, {
    id: randomId("batch", 24), accountId: principal.accountId, keyId: principal.keyId, principal, endpoint: body.endpoint, inputFileId: file.id,
    completionWindow: body.completion_window, metadata: body.metadata ?? null, windowMs: WINDOW_MS, traceparent: traceparent ?? null,
  });
}

export async function getBatch(deps: AppDeps, accountId: string, id: string): Promise<BatchRow> {
  const b = await findBatch(deps.database.db, id, accountId);
  if (!b) throw batchNotFound(id);
  return b;
}

/** validating / in_progress → cancelling (lines not yet started never run; the scheduler writes the files and ends it cancelled). */
export async function cancelBatch(deps: AppDeps, accountId: string, id: string): Promise<BatchRow> {
  const b = await requestCancel(deps.database.db, id, accountId);
  if (!b) throw batchNotFound(id);
  if (b.status !== "cancelling" && b.status !== "cancelled") {
    throw badRequest(`The batch ${b.id} is ${b.status}: only a validating or in-progress batch can be cancelled.`, "batch_id", "batch_not_cancellable");
  }
  return b;
}
