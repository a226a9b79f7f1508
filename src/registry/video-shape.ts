/**
 * What a video model takes: the sizes and clip lengths its plugin declares (SDK defaults: the
 * first API's three sizes, 1–10 s), narrowed by the models file, and whether it can remix. Checked
 * at boot with the model's prices: every size it takes must have a price (`perSecondBySize` for
 * that size, or `perSecond`), so no request can be free by accident.
 */
import type { ModelConfig } from "../config.ts";
import { ConfigError } from "../errors.ts";
import { DEFAULT_VIDEO_SECONDS, DEFAULT_VIDEO_SIZES, type ModelPricing, type VideoCapability } from "../plugin-sdk/index.ts";

export interface VideoShape {
  sizes: readonly string[];
  seconds: readonly number[];
  remix: boolean;
}

export function videoShape(video: VideoCapability, m: ModelConfig, at: string): VideoShape {
  const declaredSizes = video.sizes ?? DEFAULT_VIDEO_SIZES;
  const declaredSeconds = video.seconds ?? DEFAULT_VIDEO_SECONDS;
  const notDeclared = (m.sizes ?? []).filter((s) => !declaredSizes.includes(s));
  if (notDeclared.length) throw new ConfigError(`${at}.sizes`, `model "${m.id}": ${notDeclared.join(", ")} not rendered by plugin "${m.plugin}" (it takes ${declaredSizes.join(", ")})`);
  const notSeconds = (m.seconds ?? []).filter((s) => !declaredSeconds.includes(s));
  if (notSeconds.length) throw new ConfigError(`${at}.seconds`, `model "${m.id}": ${notSeconds.join(", ")} s not rendered by plugin "${m.plugin}" (it takes ${declaredSeconds.join(", ")})`);
  const shape = {
    sizes: m.sizes ? declaredSizes.filter((s) => m.sizes!.includes(s)) : [...declaredSizes],
    seconds: m.seconds ? declaredSeconds.filter((s) => m.seconds!.includes(s)) : [...declaredSeconds],
    remix: video.remix === true,
  };
  checkPrices(m.pricing, shape.sizes, m.id, at);
  return shape;
}

function checkPrices(p: ModelPricing, sizes: readonly string[], id: string, at: string) {
  const bySize = p.perSecondBySize ?? {};
  const extra = Object.keys(bySize).filter((s) => !sizes.includes(s));
  if (extra.length) throw new ConfigError(`${at}.pricing.perSecondBySize`, `model "${id}" does not take ${extra.join(", ")} (sizes: ${sizes.join(", ")}); price only the sizes it takes, or list them in \`sizes\``);
  if (p.perSecond !== undefined) return;
  const unpriced = sizes.filter((s) => bySize[s] === undefined);
  if (Object.keys(bySize).length && unpriced.length) throw new ConfigError(`${at}.pricing`, `model "${id}" has no price for ${unpriced.join(", ")}: add them to perSecondBySize, set perSecond for the rest, or narrow \`sizes\``);
}
