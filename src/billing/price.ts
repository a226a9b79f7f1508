import type { ModelPricing } from "../plugin-sdk/index.ts";

/** What a request or job used, in the units prices are given in. */
export interface BillableUsage {
  /** every prompt token, the cached and cache-write ones included */
  promptTokens?: number;
  /** of `promptTokens`: read from the upstream's prompt cache */
  cachedTokens?: number;
  /** of `promptTokens`: written to the upstream's prompt cache */
  cacheWriteTokens?: number;
  completionTokens?: number;
  seconds?: number;
  /** video: the output size ("1280x720"), which picks the per-second price (videoRate) */
  size?: string;
}

/** A model's prices as an account pays them: the list prices, or a price plan's (plans.ts). */
export interface EffectivePricing extends ModelPricing {
  /** the price plan applied (absent: list prices) */
  plan?: string;
  /** the plan's adjustment, in basis points of a percent (-1000 = −10 %), applied to every rate it does not override */
  adjustmentBp?: number;
  /** the prices the plan overrides for this model: taken as they are, not adjusted */
  overridden?: Array<keyof ModelPricing>;
  /** a batch line: the price is `batchPercent` % (default DEFAULT_BATCH_PERCENT) of the (plan's) price */
  batch?: boolean;
}

/** a batch line costs this percentage of the live price unless the model's pricing says otherwise */
export const DEFAULT_BATCH_PERCENT = 50;

/**
 * The per-second price of a video at `size`: `perSecondBySize[size]` when the model prices that
 * size, else `perSecond`; `basis` names the one that applied, for the usage row.
 */
export function videoRate(pricing: ModelPricing, size?: string): { perSecond: number; basis: string; key: "perSecondBySize" | "perSecond" } {
  const bySize = size !== undefined ? pricing.perSecondBySize?.[size] : undefined;
  if (bySize !== undefined) return { perSecond: bySize, basis: `perSecondBySize[${size}]=${bySize}`, key: "perSecondBySize" };
  return { perSecond: pricing.perSecond ?? 0, basis: `perSecond=${pricing.perSecond ?? 0}`, key: "perSecond" };
}

const MILLION = 1_000_000n;
const WHOLE_BP = 10_000n;

/**
 * The one price formula: integer micro-dollars, computed exactly and rounded once per request, up
 * (a 3-token embeddings request at $0.02/M costs 1 micro-dollar, not 0). Token rates are per million;
 * prompt tokens read from or written to a prompt cache cost `cachedInputPerMillion` /
 * `cacheWritePerMillion`, the input price when the model has none; video is per second (by output
 * size when the model prices sizes). A price plan's adjustment applies to the exact amount before
 * the one rounding: 101 tokens at $0.10/M are 10.1 micro-dollars, at −5 % exactly 9.595, billed 10
 * (rounding the list price first and again after the adjustment would bill 11). Inputs must be
 * credible non-negative integers, the cache counts within the prompt (usage-sanity.ts).
 */
export function priceOf(pricing: EffectivePricing, u: BillableUsage): number {
  const video = videoRate(pricing, u.size);
  const input = pricing.inputPerMillion ?? 0;
  const cached = u.cachedTokens ?? 0;
  const written = u.cacheWriteTokens ?? 0;
  const fresh = (u.promptTokens ?? 0) - cached - written;
  if (!pricing.adjustmentBp && !pricing.batch) {
    // list prices (or a plan that only overrides): the formula as it always was
    const tokens = fresh * input
      + cached * (pricing.cachedInputPerMillion ?? input)
      + written * (pricing.cacheWritePerMillion ?? input)
      + (u.completionTokens ?? 0) * (pricing.outputPerMillion ?? 0);
    return Math.ceil(tokens / 1_000_000) + (u.seconds ?? 0) * video.perSecond;
  }
  // Exact in integers: Σ units × rate × (10,000 + adjustment, or 10,000 for an overridden price)
  // over 10^6 × 10^4. Token counts up to 2^31 times rates up to 2^53 pass 2^53, hence BigInt.
  const adjusted = WHOLE_BP + BigInt(Math.round(pricing.adjustmentBp ?? 0));
  const factor = (key: keyof ModelPricing) => (pricing.overridden?.includes(key) ? WHOLE_BP : adjusted);
  const part = (units: number | undefined, rate: number | undefined, key: keyof ModelPricing, scale: bigint) => (units && rate ? BigInt(units) * BigInt(rate) * factor(key) * scale : 0n);
  // a cache price the model lacks is its input price, adjusted (or not) like it
  const cacheKey = (k: "cachedInputPerMillion" | "cacheWritePerMillion") => (pricing[k] !== undefined ? k : "inputPerMillion");
  const n =
    part(fresh, input, "inputPerMillion", 1n) +
    part(cached, pricing.cachedInputPerMillion ?? input, cacheKey("cachedInputPerMillion"), 1n) +
    part(written, pricing.cacheWritePerMillion ?? input, cacheKey("cacheWritePerMillion"), 1n) +
    part(u.completionTokens, pricing.outputPerMillion, "outputPerMillion", 1n) +
    part(u.seconds, video.perSecond, video.key, MILLION);
  // a batch line: × percent / 100 in the same exact sum, one rounding (up) at the end
  const percent = pricing.batch ? BigInt(pricing.batchPercent ?? DEFAULT_BATCH_PERCENT) : 100n;
  const d = MILLION * WHOLE_BP * 100n;
  return Number((n * percent + d - 1n) / d);
}

/**
 * The most `u` can cost once the upstream says how its prompt was served: every prompt token at
 * the dearest prompt price (a cache write costs more than a fresh token at Anthropic: 1.25×). What
 * a request's hold covers.
 */
export function worstPriceOf(pricing: EffectivePricing, u: Pick<BillableUsage, "promptTokens" | "completionTokens">): number {
  const writesCostMore = (pricing.cacheWritePerMillion ?? 0) > (pricing.inputPerMillion ?? 0);
  return priceOf(pricing, { ...u, cacheWriteTokens: writesCostMore ? u.promptTokens : 0 });
}

type RateKey = "inputPerMillion" | "outputPerMillion" | "perSecond" | "cachedInputPerMillion" | "cacheWritePerMillion";

/** A rate as the account pays it, per million tokens or per second (it may have a fraction of a micro-dollar). */
export function effectiveRate(pricing: EffectivePricing, key: RateKey, rate: number | undefined = pricing[key]): number | null {
  if (rate === undefined) return null;
  if (!pricing.adjustmentBp || pricing.overridden?.includes(key)) return rate;
  return (rate * (10_000 + pricing.adjustmentBp)) / 10_000;
}

/** Per-size video prices as the account pays them (null: the model prices no size). */
export function effectiveSizeRates(pricing: EffectivePricing): Record<string, number> | null {
  if (!pricing.perSecondBySize) return null;
  const adjust = pricing.adjustmentBp && !pricing.overridden?.includes("perSecondBySize") ? pricing.adjustmentBp : 0;
  return Object.fromEntries(Object.entries(pricing.perSecondBySize).map(([size, r]) => [size, (r * (10_000 + adjust)) / 10_000]));
}
