/**
 * A served model in words an operator reads at boot: prices are configured in micro-dollars, so
 * `inputPerMillion: 2000000` is shown as "$2.00 per 1M input tokens" (a misplaced zero shows at once).
 */
import type { ModelPricing } from "../plugin-sdk/index.ts";
import type { RegisteredModel } from "./model-registry.ts";

/** micro-dollars → "$2.00", "$0.02", "$0.000001" (at least cents, never rounded away) */
export function usd(micros: number): string {
  const text = (micros / 1_000_000).toFixed(6).replace(/0+$/, "");
  const [whole, frac = ""] = text.split(".");
  return `$${whole}.${frac.padEnd(2, "0")}`;
}

export function priceText(p: ModelPricing): string {
  const parts: string[] = [];
  if (p.inputPerMillion !== undefined) parts.push(`${usd(p.inputPerMillion)} per 1M input tokens`);
  if (p.outputPerMillion !== undefined) parts.push(`${usd(p.outputPerMillion)} per 1M output tokens`);
  if (p.cachedInputPerMillion !== undefined) parts.push(`${usd(p.cachedInputPerMillion)} per 1M cached input tokens`);
  if (p.cacheWritePerMillion !== undefined) parts.push(`${usd(p.cacheWritePerMillion)} per 1M cache-write tokens`);
  if (p.perSecond !== undefined) parts.push(`${usd(p.perSecond)} per second of video`);
  for (const [size, price] of Object.entries(p.perSecondBySize ?? {})) parts.push(`${usd(price)} per second of video at ${size}`);
  return parts.length ? parts.join(", ") : "free (no price configured)";
}

/** the fields of the boot line "model served" */
export function describeModel(m: RegisteredModel) {
  return { model: m.id, plugin: m.plugin, capabilities: m.capabilities, prices: priceText(m.pricing) };
}
