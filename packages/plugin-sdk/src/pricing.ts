/**
 * The checks of a model's prices and video sizes, with no imports: reelay's config reads them
 * before it listens (its models file), where nothing else of the SDK is loaded.
 */
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** "1280x720": even width and height from 16 to 4096 (what an H.264 yuv420p video can be here) */
export function isVideoSize(v: unknown): v is string {
  const m = typeof v === "string" ? /^(\d{2,4})x(\d{2,4})$/.exec(v) : null;
  return !!m && [m[1], m[2]].every((n) => Number(n) >= 16 && Number(n) <= 4096 && Number(n) % 2 === 0);
}

const PRICE_KEYS = ["inputPerMillion", "outputPerMillion", "cachedInputPerMillion", "cacheWritePerMillion", "perSecond", "perSecondBySize", "batchPercent"] as const;

/** A model's prices as the host accepts them (models file, plugin declarations): each problem names its key under `at`. */
export function problemsWithPricing(pricing: unknown, at = "pricing"): string[] {
  if (!isObject(pricing)) return [`${at}: must be an object`];
  const problems: string[] = [];
  const price = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
  for (const [k, v] of Object.entries(pricing)) {
    if (!(PRICE_KEYS as readonly string[]).includes(k)) problems.push(`${at}.${k}: unknown price; expected one of ${PRICE_KEYS.join(", ")}`);
    else if (k === "perSecondBySize") {
      if (!isObject(v)) problems.push(`${at}.perSecondBySize: must be an object of "WIDTHxHEIGHT": micro-dollars per second`);
      else for (const [size, p] of Object.entries(v)) {
        if (!isVideoSize(size)) problems.push(`${at}.perSecondBySize.${size}: not a size like "1280x720" (even numbers from 16 to 4096)`);
        else if (!price(p)) problems.push(`${at}.perSecondBySize.${size}: must be a non-negative integer (micro-dollars)`);
      }
    } else if (k === "batchPercent") {
      if (!Number.isSafeInteger(v) || (v as number) < 0 || (v as number) > 100) problems.push(`${at}.batchPercent: must be an integer percentage from 0 to 100 (of the live price, for batch lines)`);
    } else if (!price(v)) problems.push(`${at}.${k}: must be a non-negative integer (micro-dollars)`);
  }
  return problems;
}
