/** The one INSERT of video_jobs: a job is born queued, in the submit transaction that holds its price. */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../../../db/index.ts";
import type { VideoJobStatus } from "../../../db/schema/index.ts";
import type { VideoJobRow } from "./columns.ts";

const FIRST_STATUS: VideoJobStatus = "queued";

export type NewJob = Pick<VideoJobRow,
  "id" | "accountId" | "keyId" | "model" | "prompt" | "negativePrompt" | "seed" | "steps" | "seconds" | "width" | "height" |
  "holdId" | "idempotencyKey" | "requestHash" | "webhookUrl" | "linksBase" | "imageMime" | "blobStore" | "priceBasis" | "remixedFrom" | "route"> & Partial<Pick<VideoJobRow, "traceparent">>;

/** The new job's created_at; null when another request of this account already used its Idempotency-Key. */
export async function insertJob(tx: Tx, j: NewJob): Promise<Date | null> {
  const rows = await query<{ created_at: string | Date }>(tx, sql`
    INSERT INTO video_jobs (webhook_url, links_base, id, account_id, key_id, model, status, prompt, negative_prompt, seed, steps, seconds, width, height,
      image_mime, blob_store, price_basis, remixed_from, hold_id, idempotency_key, request_hash, route, traceparent)
    VALUES (${j.webhookUrl}, ${j.linksBase}, ${j.id}, ${j.accountId}, ${j.keyId}, ${j.model}, ${FIRST_STATUS}, ${j.prompt}, ${j.negativePrompt}, ${j.seed},
      ${j.steps}, ${j.seconds}, ${j.width}, ${j.height}, ${j.imageMime}, ${j.blobStore}, ${j.priceBasis}, ${j.remixedFrom},
      ${j.holdId}, ${j.idempotencyKey}, ${j.requestHash}, ${j.route}, ${j.traceparent ?? null})
    ON CONFLICT (account_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
    RETURNING created_at`);
  return rows[0] ? new Date(rows[0].created_at) : null;
}
