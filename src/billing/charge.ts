/**
 * The one charge lifecycle of a synchronous request (chat, embeddings):
 *
 *   const charge = await openCharge(deps, { accountId, keyId, ref, kind, model, plugin, pricing, worstCase, reason });
 *   … call the plugin …
 *   charge.settle({ status: 200, usage: { promptTokens, completionTokens }, … })   // or
 *   charge.release({ status: 502, errorCode: "upstream_error" })
 *
 * `openCharge` approves the worst case (402 / 503 when it cannot); settle and release are
 * synchronous: the usage row and the money are written by the engine's next batch, and the
 * settlement is journaled before they return. Price: `priceOf`, on the account's plan (`applyPlan`).
 * Video jobs: job-charge.ts.
 */
import type { Logger } from "../logger.ts";
import type { Telemetry } from "../ops/hooks.ts";
import type { ModelPricing } from "../plugin-sdk/index.ts";
import type { UsageFacts } from "../usage/record-usage.ts";
import type { ApprovalRequest, CreditEngine } from "./engine.ts";
import type { Settlement } from "./settle-batch.ts";
import { applyPlan, pricingFacts, type PricePlan } from "./plans.ts";
import { priceOf, type BillableUsage, type EffectivePricing } from "./price.ts";

export interface ChargeSpec {
  accountId: string;
  keyId: string | null;
  /** the request id: one charge per ref, ever */
  ref: string;
  kind: "chat" | "embeddings";
  /** the API route the client called, recorded on the usage row ("/v1/responses") */
  route?: string;
  model: string;
  plugin: string;
  /** the model's prices as the account pays them (applyPlan of its plan) */
  pricing: EffectivePricing;
  /** the account's price plan: a model that serves instead (a fallback) is priced on it too */
  plan?: PricePlan | null;
  /** micro-dollars approved before the call (priceOf the worst case) */
  worstCase: number;
  /** ledger reason of the approval, e.g. "chat m: hold for 12 prompt + 16 output tokens" */
  reason: string;
  /** performance.now() when the request started (usage row latency) */
  startedAt: number;
}

/** What the usage row says besides tokens and cost. */
export interface OutcomeFacts {
  status: number;
  deliveredTokens?: number | null;
  reportedTokens?: number | null;
  tokenSource?: "upstream" | "local" | null;
  disconnected?: boolean;
  errorCode?: string | null;
  /** upstream usage that was not credible (see usage-sanity.ts) */
  anomaly?: string | null;
}

export interface SettleOutcome extends OutcomeFacts {
  /** credible counts only (usage-sanity.ts) */
  usage: BillableUsage;
}

/**
 * What approves a charge and takes its settlement: the credit engine (a live request), or a batch
 * line's own ledger (modules/batches/line-ledger.ts), which takes an exact hold and writes the
 * settlement in the transaction of the line's output.
 */
export interface ChargeLedger<A = any> {
  approve(req: ApprovalRequest): Promise<A>;
  settle(approval: A, s: Omit<Settlement, "holdId" | "cover">): void;
}

type ChargeDeps = { billing: ChargeLedger; telemetry: Telemetry; logger: Logger };

export class Charge {
  private closed = false;

  constructor(private readonly deps: ChargeDeps, private current: ChargeSpec, private readonly approval: unknown) {}

  get spec(): ChargeSpec {
    return this.current;
  }

  /**
   * Another model serves the request (a model-level fallback): the settlement is priced, and the
   * usage row written, for that model. The approval stays as it was: it covered the dearest candidate.
   */
  servedBy(model: { id: string; plugin: string; pricing: ModelPricing }): void {
    this.current = { ...this.current, model: model.id, plugin: model.plugin, pricing: applyPlan(this.current.plan, model.id, model.pricing) };
  }

  /** Charge what was used (once); returns the cost in micro-dollars. */
  settle(o: SettleOutcome): number {
    if (this.closed) return 0;
    this.closed = true;
    const cost = priceOf(this.spec.pricing, o.usage);
    this.close("settle", cost, o, o.usage);
    this.deps.telemetry.charged({ model: this.spec.model, kind: this.spec.kind, micros: cost, promptTokens: o.usage.promptTokens, completionTokens: o.usage.completionTokens });
    return cost;
  }

  /** Nothing was produced: charge nothing, give the worst case back (once). */
  release(o: OutcomeFacts): void {
    if (this.closed) return;
    this.closed = true;
    this.close("release", 0, o, null);
  }

  private close(mode: "settle" | "release", actual: number, o: OutcomeFacts, usage: BillableUsage | null) {
    const s = this.spec;
    if (o.anomaly) this.deps.logger.warn({ ref: s.ref, model: s.model, plugin: s.plugin, anomaly: o.anomaly }, "upstream usage not credible; billed on reelay's own count");
    this.deps.billing.settle(this.approval, settlementOf(s, mode, actual, o, usage, Math.round(performance.now() - s.startedAt), s.pricing));
  }
}

/**
 * The settlement of a charge (request or video job): its usage row and ledger reason. One builder,
 * so every operation's usage row says the same things the same way.
 */
export function settlementOf(
  s: Pick<ChargeSpec, "accountId" | "keyId" | "ref" | "model" | "route"> & { kind: UsageFacts["kind"]; plugin: string | null },
  mode: "settle" | "release",
  actual: number,
  o: OutcomeFacts,
  usage: BillableUsage | null,
  latencyMs: number,
  pricing: EffectivePricing | null = null,
): Omit<Settlement, "holdId" | "cover"> {
  const priced = pricing ? pricingFacts(pricing) : { plan: null, pricing: null };
  const row: UsageFacts = {
    accountId: s.accountId, keyId: s.keyId, ref: s.ref, kind: s.kind, model: s.model, plugin: s.plugin,
    promptTokens: usage?.promptTokens ?? null, completionTokens: usage?.completionTokens ?? null, seconds: usage?.seconds ?? null,
    // null when nothing came from a prompt cache: most models have none
    cachedTokens: usage?.cachedTokens || null, cacheWriteTokens: usage?.cacheWriteTokens || null,
    deliveredTokens: o.deliveredTokens ?? null, reportedTokens: o.reportedTokens ?? null, tokenSource: o.tokenSource ?? null,
    status: o.status, disconnected: o.disconnected ?? false, latencyMs: Math.min(2_147_483_647, latencyMs),
    errorCode: o.errorCode ?? null, anomaly: o.anomaly ?? null, route: s.route ?? null, plan: priced.plan, pricing: priced.pricing,
  };
  const what = s.kind === "video" ? `video ${s.ref}` : `${s.kind} ${s.model}`;
  const reason = mode === "settle" ? (s.kind === "video" ? `${what}: ${usage?.seconds ?? 0} s` : what) : `${what}${s.kind === "video" ? " failed" : ""}: ${o.errorCode ?? "nothing produced"}`;
  return { mode, actual, reason, usage: row };
}

/**
 * Approve the request's worst case, in the account and in the budget windows of its key and model,
 * and return its charge. Throws 402 insufficient_quota or budget_exceeded, or 503.
 */
export async function openCharge(deps: ChargeDeps, spec: ChargeSpec): Promise<Charge> {
  const approval = await deps.billing.approve({ accountId: spec.accountId, keyId: spec.keyId, model: spec.model, ref: spec.ref, amount: spec.worstCase, reason: spec.reason });
  return new Charge(deps, spec, approval);
}
