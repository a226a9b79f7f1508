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
 * per-second price of video (by output size when the model prices sizes). Prompt tokens read from or
 * written to a prompt cache cost `cachedInputPerMillion` / `cacheWritePerMillion`, the input price
 * when the model has none. Inputs must be credible non-negative integers, the cache counts within
 * the prompt (usage-sanity.ts).
 */
export function priceOf(pricing: ModelPricing, u: BillableUsage): number {
  const input = pricing.inputPerMillion ?? 0;
  const cached = u.cachedTokens ?? 0;
  const written = u.cacheWriteTokens ?? 0;
  const tokens = ((u.promptTokens ?? 0) - cached - written) * input
    + cached * (pricing.cachedInputPerMillion ?? input)
    + written * (pricing.cacheWritePerMillion ?? input)
    + (u.completionTokens ?? 0) * (pricing.outputPerMillion ?? 0);
  return Math.ceil(tokens / 1_000_000) + (u.seconds ?? 0) * videoRate(pricing, u.size).perSecond;
}

/**
 * The most `u` can cost once the upstream says how its prompt was served: every prompt token at
 * the dearest prompt price (a cache write costs more than a fresh token at Anthropic: 1.25×). What
 * a request's hold covers.
 */
export function worstPriceOf(pricing: ModelPricing, u: Pick<BillableUsage, "promptTokens" | "completionTokens">): number {
  const writesCostMore = (pricing.cacheWritePerMillion ?? 0) > (pricing.inputPerMillion ?? 0);
  return priceOf(pricing, { ...u, cacheWriteTokens: writesCostMore ? u.promptTokens : 0 });
}
