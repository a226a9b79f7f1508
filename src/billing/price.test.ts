/**
 * The one price formula with prompt-cache prices, and what an upstream's cache counts may bill.
 * Prices are micro-dollars per million tokens; a request is rounded up once, whatever its parts.
 */
import { describe, expect, test } from "bun:test";
import { priceOf, worstPriceOf } from "./price.ts";
import { credibleCacheCounts, credibleCount } from "./usage-sanity.ts";

/** Claude-like: $3 input, $15 output, $0.30 cache reads, $3.75 cache writes */
const CACHED = { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000, cachedInputPerMillion: 300_000, cacheWritePerMillion: 3_750_000 };
const PLAIN = { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 };

describe("priceOf with prompt-cache prices", () => {
  test("each kind of prompt token at its own price, rounded up once over the request", () => {
    // 1,000 prompt tokens: 600 fresh × 3 + 300 read × 0.3 + 100 written × 3.75 = 1,800 + 90 + 375; 10 output × 15 = 150
    expect(priceOf(CACHED, { promptTokens: 1_000, cachedTokens: 300, cacheWriteTokens: 100, completionTokens: 10 })).toBe(2_415);
    // 7 cache reads at $0.30/M = 2.1 micro-dollars, rounded up once: 3
    expect(priceOf(CACHED, { promptTokens: 7, cachedTokens: 7 })).toBe(3);
    // 1 fresh (3) + 1 read (0.3) + 1 written (3.75) = 7.05 → 8, not 3 + 1 + 4
    expect(priceOf(CACHED, { promptTokens: 3, cachedTokens: 1, cacheWriteTokens: 1 })).toBe(8);
  });

  test("a model without the cache prices bills cached and cache-write tokens at the input price (nothing changes for it)", () => {
    const u = { promptTokens: 1_000, completionTokens: 10 };
    expect(priceOf(PLAIN, { ...u, cachedTokens: 300, cacheWriteTokens: 100 })).toBe(priceOf(PLAIN, u));
    expect(priceOf(PLAIN, u)).toBe(3_000 + 150);
    // only one of the two prices given: the other falls back to the input price
    expect(priceOf({ ...PLAIN, cachedInputPerMillion: 0 }, { promptTokens: 1_000, cachedTokens: 1_000, cacheWriteTokens: 0 })).toBe(0);
    expect(priceOf({ ...PLAIN, cacheWritePerMillion: 6_000_000 }, { promptTokens: 1_000, cachedTokens: 500, cacheWriteTokens: 500 })).toBe(500 * 3 + 500 * 6);
  });
});

describe("worstPriceOf (what a hold covers)", () => {
  test("every prompt token at the dearest prompt price: a cache write when it costs more than a fresh token", () => {
    expect(worstPriceOf(CACHED, { promptTokens: 1_000, completionTokens: 10 })).toBe(3_750 + 150);
    expect(worstPriceOf(PLAIN, { promptTokens: 1_000, completionTokens: 10 })).toBe(3_000 + 150);
    expect(worstPriceOf({ ...PLAIN, cacheWritePerMillion: 1_000_000 }, { promptTokens: 1_000, completionTokens: 10 })).toBe(3_000 + 150);
  });
});

describe("credibleCacheCounts", () => {
  const upstreamPrompt = (n: number) => credibleCount("prompt_tokens", n, { local: 10, max: 10_000 });

  test("counts within the upstream's credible prompt are billed as reported", () => {
    expect(credibleCacheCounts({ cached: 300, cacheWrite: 100 }, upstreamPrompt(1_000))).toEqual({ cached: 300, cacheWrite: 100, anomaly: null });
    expect(credibleCacheCounts({ cached: 1_000 }, upstreamPrompt(1_000))).toEqual({ cached: 1_000, cacheWrite: 0, anomaly: null });
    expect(credibleCacheCounts({}, upstreamPrompt(1_000))).toEqual({ cached: 0, cacheWrite: 0, anomaly: null });
  });

  test("more cache tokens than prompt tokens, or a count that is not one: billed at the input price, the anomaly recorded", () => {
    expect(credibleCacheCounts({ cached: 900, cacheWrite: 200 }, upstreamPrompt(1_000))).toEqual({ cached: 0, cacheWrite: 0, anomaly: expect.stringMatching(/900 cached \+ 200 written > 1000 prompt tokens/) });
    expect(credibleCacheCounts({ cached: -5, cacheWrite: 100 }, upstreamPrompt(1_000))).toEqual({ cached: 0, cacheWrite: 100, anomaly: expect.stringMatching(/cached_tokens: upstream reported -5, not a count/) });
    expect(credibleCacheCounts({ cached: "300" }, upstreamPrompt(1_000))).toEqual({ cached: 0, cacheWrite: 0, anomaly: expect.stringMatching(/cached_tokens: upstream reported "300"/) });
    expect(credibleCacheCounts({ cacheWrite: 2.5 }, upstreamPrompt(1_000))).toEqual({ cached: 0, cacheWrite: 0, anomaly: expect.stringMatching(/cache_write_tokens: upstream reported 2.5/) });
  });

  test("a prompt reelay counted itself (the upstream's was absurd) keeps no cache parts", () => {
    const local = credibleCount("prompt_tokens", 1e9, { local: 40, max: 1_000 });
    expect(local.source).toBe("local");
    expect(credibleCacheCounts({ cached: 30 }, local)).toEqual({ cached: 0, cacheWrite: 0, anomaly: expect.stringMatching(/ignored/) });
  });
});
