/**
 * The charge lifecycle of a video job: the hold must outlive the process, so it is an exact hold
 * taken in the submit transaction, and the job's final transition settles or releases it in the
 * transaction of its final status (same settlement statement as every request: settle-batch.ts).
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../db/index.ts";
import type { ModelPricing } from "../plugin-sdk/index.ts";
import { hold } from "./exact-holds.ts";
import { priceOf } from "./price.ts";
import { settleOne } from "./settle-batch.ts";

/** Hold price/s × seconds for job `jobId` (402 when the account cannot afford it). Returns the hold id. */
export async function openJobCharge(tx: Tx, j: { accountId: string; jobId: string; model: string; seconds: number; pricing: ModelPricing }): Promise<string> {
  const amount = priceOf(j.pricing, { seconds: j.seconds });
  const h = await hold(tx, { accountId: j.accountId, amount, ref: j.jobId, reason: `video ${j.jobId}: ${j.model}, ${j.seconds} s`, expiresAt: null });
  return h.id;
}

export interface JobOutcome {
  holdId: string | null;
  jobId: string;
  accountId: string;
  keyId: string | null;
  model: string;
  seconds: number;
  plugin: string | null;
  latencyMs: number;
  /** null: completed, charged the held price (fixed at submit); else the failure code (nothing charged) */
  failure: { code: string; status: number } | null;
}

/** Settle (completed) or release (failed) the job's hold and write its usage row; returns the charge. */
export async function closeJobCharge(tx: Tx, o: JobOutcome): Promise<number> {
  let actual = 0;
  if (!o.failure && o.holdId) actual = Number((await query<{ amount: number }>(tx, sql`SELECT amount::float8 AS amount FROM holds WHERE id = ${o.holdId}`))[0]?.amount ?? 0);
  const r = await settleOne(tx, {
    holdId: o.holdId,
    mode: o.failure ? "release" : "settle",
    actual,
    cover: 0,
    reason: o.failure ? `video ${o.jobId} failed: ${o.failure.code}` : `video ${o.jobId}: ${o.seconds} s`,
    usage: {
      accountId: o.accountId, keyId: o.keyId, ref: o.jobId, kind: "video", model: o.model, seconds: o.seconds,
      status: o.failure?.status ?? 200, latencyMs: Math.min(2_147_483_647, o.latencyMs), plugin: o.plugin, errorCode: o.failure?.code ?? null,
    },
  });
  return r.charged;
}
