/**
 * `batch.completed`, `batch.failed`, `batch.expired`, `batch.cancelled` through the webhook outbox,
 * queued in the transaction of the batch's final transition (so a crash can neither lose nor invent
 * one); the batch id is the event's key, so it is queued once per endpoint. Opt-in per endpoint.
 */
import type { AppDeps } from "../../deps.ts";
import type { Tx } from "../../db/index.ts";
import { enqueueAccountEvent } from "../webhooks/outbox.ts";
import type { BatchRow } from "./batch-table.ts";
import { batchObject } from "./service.ts";

export async function batchEvent(deps: AppDeps, tx: Tx, b: BatchRow): Promise<void> {
  if (b.status !== "completed" && b.status !== "failed" && b.status !== "expired" && b.status !== "cancelled") return;
  await enqueueAccountEvent(tx, { eventId: b.id, accountId: b.accountId, type: `batch.${b.status}`, data: await batchObject(deps, b), traceparent: b.traceparent }, { retryWindowMs: deps.config.webhooks.retryWindowMs });
}
