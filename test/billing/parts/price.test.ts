/**
 * The one price formula and its rounding rule (src/billing/price.ts): exact, per request, rounded
 * once, up. Without a plan it is the formula reelay always had (checked against it on random
 * usage); with a plan it is the exact amount on the plan's prices rounded once (checked against a
 * rational reference), never the list price rounded and then adjusted and rounded again.
 */
import { expect, test } from "bun:test";
import fc from "fast-check";
import { applyPlan, type PricePlan } from "../../../src/billing/plans.ts";
import { effectiveRate, priceOf } from "../../../src/billing/price.ts";

const plan = (adjustmentBp: number, models: PricePlan["models"] = {}): PricePlan => ({ id: "p", name: null, adjustmentBp, models, source: "api" });

test("worked examples: adjusted once, rounded once, up", () => {
  const list = { inputPerMillion: 100_000, outputPerMillion: 400_000, perSecond: 30_000 };
  // 101 tokens at $0.10/M = 10.1 micro-dollars; −5 % = 9.595 → 10 (rounding 10.1 up to 11 first, then adjusting, would give 10.45 → 11)
  expect(priceOf(applyPlan(plan(-500), "m", list), { promptTokens: 101 })).toBe(10);
  expect(priceOf(list, { promptTokens: 101 })).toBe(11);
  // an exact result is not rounded: 1,000 tokens at −10 % = 90
  expect(priceOf(applyPlan(plan(-1000), "m", list), { promptTokens: 1_000 })).toBe(90);
  // the smallest charge is a micro-dollar: 3 tokens at $0.10/M, −50 % = 0.15 → 1
  expect(priceOf(applyPlan(plan(-5000), "m", list), { promptTokens: 3 })).toBe(1);
  // video: 5 s × 30,000 at +7.25 % = 160,875 exactly
  expect(priceOf(applyPlan(plan(725), "m", list), { seconds: 5 })).toBe(160_875);
  // −100 %: free
  expect(priceOf(applyPlan(plan(-10_000), "m", list), { promptTokens: 10_000, completionTokens: 10_000, seconds: 10 })).toBe(0);
  // an override is taken as it is; the other rates are adjusted; one rounding over the sum
  const p = applyPlan(plan(-1250, { m: { inputPerMillion: 1_000_001 } }), "m", list);
  expect(p).toMatchObject({ inputPerMillion: 1_000_001, outputPerMillion: 400_000, plan: "p", adjustmentBp: -1250, overridden: ["inputPerMillion"] });
  // 11 × 1,000,001 / 10^6 = 11.000011; 8 × 400,000 × 0.875 / 10^6 = 2.8; sum 13.800011 → 14
  expect(priceOf(p, { promptTokens: 11, completionTokens: 8 })).toBe(14);
  expect(effectiveRate(p, "inputPerMillion")).toBe(1_000_001);
  expect(effectiveRate(p, "outputPerMillion")).toBe(350_000);
  // a plan for other models leaves this one at list prices, adjusted
  expect(applyPlan(plan(0, { other: { perSecond: 1 } }), "m", list)).toEqual({ ...list, plan: "p" });
  expect(applyPlan(null, "m", list)).toBe(list);
});

test("prompt-cache prices are adjusted like the others; without one, cached tokens follow the input price, overridden or not", () => {
  const list = { inputPerMillion: 3_000_000, cachedInputPerMillion: 300_000, cacheWritePerMillion: 3_750_000, outputPerMillion: 15_000_000 };
  const u = { promptTokens: 1_000, cachedTokens: 600, cacheWriteTokens: 300, completionTokens: 10 };
  // list: 100 × 3 + 600 × 0.3 + 300 × 3.75 + 10 × 15 = 300 + 180 + 1,125 + 150 = 1,755
  expect(priceOf(list, u)).toBe(1_755);
  // −10 %: 1,579.5 → 1,580 (one rounding over the sum)
  expect(priceOf(applyPlan(plan(-1000), "m", list), u)).toBe(1_580);
  // the input price overridden to 2,000,000 and no cache prices: every prompt token at 2 (taken as it is), output −10 %
  const noCache = { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 };
  expect(priceOf(applyPlan(plan(-1000, { m: { inputPerMillion: 2_000_000 } }), "m", noCache), u)).toBe(2_000 + 135);
});

test("per-size video prices are adjusted too, unless the plan overrides them", () => {
  const list = { perSecond: 30_000, perSecondBySize: { "1280x720": 100_000 } };
  expect(priceOf(applyPlan(plan(-2000), "v", list), { seconds: 4, size: "1280x720" })).toBe(320_000);
  expect(priceOf(applyPlan(plan(-2000), "v", list), { seconds: 4, size: "480x832" })).toBe(96_000);
  expect(priceOf(applyPlan(plan(-2000, { v: { perSecondBySize: { "1280x720": 90_000 } } }), "v", list), { seconds: 4, size: "1280x720" })).toBe(360_000);
});

test("without a plan the formula is the one reelay always had; with one it is the exact amount rounded up once (random usage and prices)", () => {
  const old = (p: { inputPerMillion?: number; outputPerMillion?: number; perSecond?: number }, u: { promptTokens?: number; completionTokens?: number; seconds?: number }) =>
    Math.ceil(((u.promptTokens ?? 0) * (p.inputPerMillion ?? 0) + (u.completionTokens ?? 0) * (p.outputPerMillion ?? 0)) / 1_000_000) + (u.seconds ?? 0) * (p.perSecond ?? 0);
  const prices = fc.record({ inputPerMillion: fc.integer({ min: 0, max: 100_000_000 }), outputPerMillion: fc.integer({ min: 0, max: 100_000_000 }), perSecond: fc.integer({ min: 0, max: 10_000_000 }) });
  const usage = fc.record({ promptTokens: fc.integer({ min: 0, max: 2_000_000 }), completionTokens: fc.integer({ min: 0, max: 200_000 }), seconds: fc.integer({ min: 0, max: 20 }) });
  fc.assert(fc.property(prices, usage, (p, u) => priceOf(p, u) === old(p, u)), { numRuns: 2_000 });
  fc.assert(
    fc.property(prices, usage, fc.integer({ min: -10_000, max: 100_000 }), fc.subarray(["inputPerMillion", "outputPerMillion", "perSecond"] as const), (p, u, bp, over) => {
      const overrides = Object.fromEntries(over.map((k) => [k, p[k]]));
      const e = applyPlan(plan(bp, { m: overrides }), "m", p);
      // the exact amount as a fraction num / 10^10, then ⌈·⌉ — independently of priceOf's own arithmetic
      const f = (k: string) => BigInt(over.includes(k as never) || bp === 0 ? 10_000 : 10_000 + bp);
      const num = BigInt(u.promptTokens) * BigInt(p.inputPerMillion) * f("inputPerMillion") + BigInt(u.completionTokens) * BigInt(p.outputPerMillion) * f("outputPerMillion") + BigInt(u.seconds) * BigInt(p.perSecond) * 1_000_000n * f("perSecond");
      const want = num === 0n ? 0 : Number((num - 1n) / 10_000_000_000n + 1n);
      return priceOf(e, u) === want;
    }),
    { numRuns: 2_000 },
  );
});
