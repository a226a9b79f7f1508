import type { ModelPricing } from "../plugin-sdk/index.ts";

/** What a request or job used, in the units prices are given in. */
export interface BillableUsage {
  promptTokens?: number;
  completionTokens?: number;
  seconds?: number;
  /** video: the output size ("1280x720"), which picks the per-second price (videoRate) */
  size?: string;
}

/**
 * The per-second price of a video at `size`: `perSecondBySize[size]` when the model prices that
 * size, else `perSecond`; `basis` names the one that applied, for the usage row.
 */
export function videoRate(pricing: ModelPricing, size?: string): { perSecond: number; basis: string } {
  const bySize = size !== undefined ? pricing.perSecondBySize?.[size] : undefined;
  if (bySize !== undefined) return { perSecond: bySize, basis: `perSecondBySize[${size}]=${bySize}` };
  return { perSecond: pricing.perSecond ?? 0, basis: `perSecond=${pricing.perSecond ?? 0}` };
}

/**
 * The one price formula: integer micro-dollars, token rates per million rounded up once over the
 * whole request (a 3-token embeddings request at $0.02/M costs 1 micro-dollar, not 0), plus the
 * per-second price of video (by output size when the model prices sizes). Inputs must be credible non-negative integers (see usage-sanity.ts).
 */
export function priceOf(pricing: ModelPricing, u: BillableUsage): number {
  const tokens = (u.promptTokens ?? 0) * (pricing.inputPerMillion ?? 0) + (u.completionTokens ?? 0) * (pricing.outputPerMillion ?? 0);
  return Math.ceil(tokens / 1_000_000) + (u.seconds ?? 0) * videoRate(pricing, u.size).perSecond;
}
