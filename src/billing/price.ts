import type { ModelPricing } from "../plugin-sdk/index.ts";

/** What a request or job used, in the units prices are given in. */
export interface BillableUsage {
  promptTokens?: number;
  completionTokens?: number;
  seconds?: number;
}

/** A model's prices as an account pays them: the list prices, or a price plan's (plans.ts). */
export interface EffectivePricing extends ModelPricing {
  /** the price plan applied (absent: list prices) */
  plan?: string;
  /** the plan's adjustment, in basis points of a percent (-1000 = −10 %), applied to every rate it does not override */
  adjustmentBp?: number;
  /** the rates the plan overrides for this model: taken as they are, not adjusted */
  overridden?: Array<keyof ModelPricing>;
}

/** Each price key and the usage it is charged on (tokens per million, seconds of video). */
const RATES: Array<{ key: keyof ModelPricing; units: (u: BillableUsage) => number; perMillion: boolean }> = [
  { key: "inputPerMillion", units: (u) => u.promptTokens ?? 0, perMillion: true },
  { key: "outputPerMillion", units: (u) => u.completionTokens ?? 0, perMillion: true },
  { key: "perSecond", units: (u) => u.seconds ?? 0, perMillion: false },
];

const MILLION = 1_000_000n;
const WHOLE_BP = 10_000n;

/**
 * The one price formula: integer micro-dollars, computed exactly and rounded once per request,
 * up (a 3-token embeddings request at $0.02/M costs 1 micro-dollar, not 0). Token rates are per
 * million; video is per second. A price plan's adjustment applies to the exact amount before the
 * one rounding: 101 tokens at $0.10/M are 10.1 micro-dollars, at −5 % exactly 9.595, billed 10
 * (rounding the list price first and again after the adjustment would bill 11). Inputs must be
 * credible non-negative integers (see usage-sanity.ts).
 */
export function priceOf(pricing: EffectivePricing, u: BillableUsage): number {
  if (!pricing.adjustmentBp) {
    // list prices (or a plan that only overrides): the formula as it always was
    const tokens = (u.promptTokens ?? 0) * (pricing.inputPerMillion ?? 0) + (u.completionTokens ?? 0) * (pricing.outputPerMillion ?? 0);
    return Math.ceil(tokens / 1_000_000) + (u.seconds ?? 0) * (pricing.perSecond ?? 0);
  }
  // Exact in integers: Σ units × rate × (10,000 + adjustment) over 10^6 × 10^4. Token counts up to
  // 2^31 times rates up to 2^53 pass 2^53, hence BigInt (a few operations per request).
  const adjusted = WHOLE_BP + BigInt(Math.round(pricing.adjustmentBp));
  let n = 0n;
  for (const r of RATES) {
    const rate = pricing[r.key];
    const units = r.units(u);
    if (!rate || !units) continue;
    const factor = pricing.overridden?.includes(r.key) ? WHOLE_BP : adjusted;
    n += BigInt(units) * BigInt(rate) * factor * (r.perMillion ? 1n : MILLION);
  }
  const d = MILLION * WHOLE_BP;
  return Number((n + d - 1n) / d);
}

/** A rate as the account pays it, per million tokens or per second (may have a fraction of a micro-dollar). */
export function effectiveRate(pricing: EffectivePricing, key: keyof ModelPricing): number | null {
  const rate = pricing[key];
  if (rate === undefined) return null;
  if (!pricing.adjustmentBp || pricing.overridden?.includes(key)) return rate;
  return (rate * (10_000 + pricing.adjustmentBp)) / 10_000;
}
