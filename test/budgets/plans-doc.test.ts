/**
 * docs/budgets-and-plans.md's models-file plan is valid as written and prices as the page says:
 * read by the models file's own parser, applied to a model with the list prices it overrides.
 */
import { expect, test } from "bun:test";
import { parse } from "yaml";
import { parseModelsFile } from "../../src/models-file.ts";
import { applyPlan, priceOf } from "../../src/billing/index.ts";
import { blocksCheckedBy } from "../readme/doc-blocks.ts";

test("the page's `plans:` example parses, overrides gpt-4o's prices as they are and takes 15 % off the rest", () => {
  const blocks = blocksCheckedBy("test/budgets/plans-doc.test.ts");
  expect(blocks.map((b) => `${b.file} ${b.lang}`)).toEqual(["docs/budgets-and-plans.md yaml"]);
  const doc = parse(blocks[0]!.code) as { plans: unknown };
  const file = parseModelsFile({ models: [{ id: "gpt-4o", plugin: "openai-compatible", pricing: { inputPerMillion: 2_500_000, outputPerMillion: 10_000_000 } }], plans: doc.plans });
  expect(file.plans).toEqual([{ id: "gold", name: "Reseller gold", adjustmentBp: -1500, models: { "gpt-4o": { inputPerMillion: 2_000_000, outputPerMillion: 8_000_000 } } }]);
  const plan = { ...file.plans[0]!, source: "file" as const };
  // gpt-4o: its own prices on the plan; another model: its list prices less 15 %, the exact amount rounded up once
  expect(priceOf(applyPlan(plan, "gpt-4o", file.models[0]!.pricing), { promptTokens: 1_000, completionTokens: 500 })).toBe(6_000);
  expect(priceOf(applyPlan(plan, "other", { inputPerMillion: 100_000 }), { promptTokens: 101 })).toBe(9); // 10.1 × 0.85 = 8.585 → 9
});
