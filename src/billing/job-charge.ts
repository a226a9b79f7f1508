/**
 * The charge of a video job: the same lifecycle as a request's (charge.ts) — approve the worst case,
 * then settle what was made or release it, one usage row, the same settlement statement, the same
 * metrics — with one difference the job's life imposes: its approval must outlive the process, so
 * it is an exact hold taken in the submit transaction, and the job's final transition settles or
 * releases it inside the transaction of its final status (money and status commit together).
 *
 *   const charge = await openJobCharge(tx, spec)                    // submit: 402 when unaffordable
 *   … the job runs, possibly on another instance, after restarts …
 *   const charge = jobCharge(deps, { ...spec, holdId })             // the final transition
 *   await charge.settle(tx) | await charge.release(tx, { status, errorCode })
 *   charge.report()                                                 // metrics, once committed
 */
import { sql } from "drizzle-orm";
import { query, type Tx } from "../db/index.ts";
import type { Telemetry } from "../ops/hooks.ts";
import { settlementOf } from "./charge.ts";
import { hold, type HoldWindows } from "./exact-holds.ts";
import { priceOf, videoRate, type EffectivePricing } from "./price.ts";
import { settleOne } from "./settle-batch.ts";

export interface JobChargeSpec {
  accountId: string;
  keyId: string | null;
  /** the job id: one charge per job, ever */
  jobId: string;
  model: string;
  plugin: string | null;
  seconds: number;
  /** output size ("1280x720"): picks the per-second price when the model prices sizes */
  size: string;
  /** the model's prices as the account pays them (applyPlan) */
  pricing: EffectivePricing;
  /** which price applied (videoRate's basis), for the usage row; fixed at submit */
  priceBasis?: string | null;
  /** the API route the job was submitted with ("/v1/videos/generations", "/v1/videos"), for the usage row */
  route?: string | null;
}

/**
 * Hold price/s (at the job's size) × seconds for the job, in the account and in the budget windows
 * it counts in (`budget`: the key's and the account's for this model, from the engine's
 * `windows.holdWindows`). 402 insufficient_quota or budget_exceeded when it cannot; StaleBudgets
 * when the budgets changed since `budget` was read (read them again and retry).
 */
export async function openJobCharge(tx: Tx, j: Omit<JobChargeSpec, "keyId" | "plugin" | "priceBasis" | "route"> & { budget?: HoldWindows | null }): Promise<{ holdId: string; priceBasis: string }> {
  const amount = priceOf(j.pricing, { seconds: j.seconds, size: j.size });
  const h = await hold(tx, { accountId: j.accountId, amount, ref: j.jobId, reason: `video ${j.jobId}: ${j.model}, ${j.seconds} s at ${j.size}`, expiresAt: null, budget: j.budget ?? null });
  // a plan's prices go with the hold: the job's usage row records them when it settles, maybe on another instance
  if (j.pricing.plan) await query(tx, sql`UPDATE holds SET pricing = ${JSON.stringify(j.pricing)} WHERE id = ${h.id}`);
  return { holdId: h.id, priceBasis: videoRate(j.pricing, j.size).basis };
}

/** The job's charge, reopened from its durable hold (null: a job submitted without one). */
export function jobCharge(deps: { telemetry: Telemetry }, spec: Omit<JobChargeSpec, "pricing" | "size"> & { holdId: string | null; createdAt: Date }): JobCharge {
  return new JobCharge(deps, spec);
}

export class JobCharge {
  private charged: number | null = null;

  constructor(private readonly deps: { telemetry: Telemetry }, readonly spec: Omit<JobChargeSpec, "pricing" | "size"> & { holdId: string | null; createdAt: Date }) {}

  /**
   * Completed: charge exactly what was held (price/s at the size × the requested seconds, fixed at submit), in
   * `tx`. Returns the charge (0 when the job had already been settled or released: nothing happens).
   */
  async settle(tx: Tx): Promise<number> {
    const s = this.spec;
    const h = s.holdId ? (await query<{ amount: number; pricing: string | null }>(tx, sql`SELECT amount::float8 AS amount, pricing FROM holds WHERE id = ${s.holdId}`))[0] : undefined;
    const held = Number(h?.amount ?? 0);
    const pricing = h?.pricing ? (JSON.parse(h.pricing) as EffectivePricing) : null;
    const settlement = settlementOf(this.row(), "settle", held, { status: 200 }, { seconds: s.seconds }, this.latency(), pricing);
    settlement.usage.priceBasis = s.priceBasis ?? null;
    const r = await settleOne(tx, { holdId: s.holdId, cover: 0, ...settlement });
    this.charged = r.charged;
    return r.charged;
  }

  /** Failed or cancelled: charge nothing, give the hold back, in `tx`. */
  async release(tx: Tx, o: { status: number; errorCode: string }): Promise<void> {
    const s = this.spec;
    const settlement = settlementOf(this.row(), "release", 0, o, { seconds: s.seconds }, this.latency());
    settlement.usage.priceBasis = s.priceBasis ?? null;
    await settleOne(tx, { holdId: s.holdId, cover: 0, ...settlement });
  }

  /** After the transaction committed: the metrics of what was charged (nothing for a release). */
  report(): void {
    if (this.charged === null) return;
    this.deps.telemetry.charged({ model: this.spec.model, kind: "video", micros: this.charged, seconds: this.spec.seconds });
  }

  private row() {
    const s = this.spec;
    return { accountId: s.accountId, keyId: s.keyId, ref: s.jobId, kind: "video" as const, model: s.model, plugin: s.plugin, route: s.route ?? undefined };
  }

  private latency() {
    return Date.now() - this.spec.createdAt.getTime();
  }
}
