/**
 * Price plans: what an account pays instead of the list prices. A plan is a percentage adjustment
 * of every model's prices and/or per-model price overrides (taken as they are). Plans come from the
 * models file (`plans:`, read-only) and from the admin API (table price_plans); an account is on at
 * most one (`accounts.plan_id`). Holds, charges, usage rows (`plan`, `pricing`), `/v1/models` and
 * the console all use the prices `applyPlan` gives; the rounding rule is priceOf's (price.ts).
 *
 * This instance reads the stored plans at start and every `refreshMs` (and at once after a change
 * through its own admin API), so a plan edited on another instance applies here within that time;
 * an account's move to another plan applies within the key cache's time (the plan id travels with
 * the key's principal).
 */
import { sql } from "drizzle-orm";
import { query, type Db, type Tx } from "../db/index.ts";
import { ApiError } from "../errors.ts";
import { problemsWithPricing, type ModelPricing } from "../plugin-sdk/index.ts";
import type { EffectivePricing } from "./price.ts";

/** the scalar prices a usage row records (per-size video prices are recorded through the price basis) */
export const PRICE_KEYS = ["inputPerMillion", "cachedInputPerMillion", "cacheWritePerMillion", "outputPerMillion", "perSecond"] as const satisfies ReadonlyArray<keyof ModelPricing>;
/** −100 % (free) to +1,000 %, in basis points of a percent */
export const MIN_ADJUSTMENT_BP = -10_000;
export const MAX_ADJUSTMENT_BP = 100_000;

export interface PricePlan {
  id: string;
  name: string | null;
  /** basis points of a percent: -1000 = −10 % */
  adjustmentBp: number;
  /** per-model overrides: the rates given replace the model's, unadjusted */
  models: Record<string, ModelPricing>;
  /** where it is defined: the models file (read-only) or the admin API */
  source: "file" | "api";
  /** batch lines: every price is also taken at the model's batch percentage (price.ts) */
  batch?: boolean;
}

/** The plan a batch line is priced on: the account's (or list prices), at each model's batch percentage. */
export function batchPlan(plan: PricePlan | null | undefined): PricePlan {
  return { ...(plan ?? { id: "", name: null, adjustmentBp: 0, models: {}, source: "file" as const }), batch: true };
}

/** The prices of `model` under `plan` (list prices when there is none). */
export function applyPlan(plan: PricePlan | null | undefined, modelId: string, base: ModelPricing): EffectivePricing {
  if (!plan) return base;
  if (plan.batch && !plan.id) return { ...base, batch: true };
  const over = plan.models[modelId];
  const overridden = over ? (Object.keys(over) as Array<keyof ModelPricing>) : [];
  return { ...base, ...over, plan: plan.id, ...(plan.adjustmentBp ? { adjustmentBp: plan.adjustmentBp } : {}), ...(overridden.length ? { overridden } : {}), ...(plan.batch ? { batch: true } : {}) };
}

/** The plan and rates a usage row records (JSON), or nulls for list prices. */
export function pricingFacts(p: EffectivePricing): { plan: string | null; pricing: string | null } {
  if (!p.plan) return { plan: null, pricing: null };
  const rates: Record<string, number> = {};
  for (const k of PRICE_KEYS) if (p[k] !== undefined) rates[k] = p[k]!;
  return { plan: p.plan, pricing: JSON.stringify({ ...rates, ...(p.perSecondBySize ? { perSecondBySize: p.perSecondBySize } : {}), adjustmentBp: p.adjustmentBp ?? 0, overridden: p.overridden ?? [] }) };
}

/** Check a plan's fields (models file or admin API); throws a message naming the field. */
export function checkPlan(p: { id: unknown; adjustmentBp: unknown; models: unknown }, at: string): void {
  const bad = (field: string, why: string) => new ApiError(400, "invalid_request_error", `${at}${field}: ${why}`, { param: field, code: "invalid_plan" });
  if (typeof p.id !== "string" || !/^[A-Za-z0-9][\w.:-]{0,63}$/.test(p.id)) throw bad("id", "expected a plan id (letters, digits, . _ : -; at most 64)");
  if (!Number.isSafeInteger(p.adjustmentBp) || (p.adjustmentBp as number) < MIN_ADJUSTMENT_BP || (p.adjustmentBp as number) > MAX_ADJUSTMENT_BP) throw bad("adjustment_percent", "expected a percentage from -100 to 1000 with at most two decimals");
  if (!p.models || typeof p.models !== "object" || Array.isArray(p.models)) throw bad("models", "expected an object of model id → prices");
  for (const [model, prices] of Object.entries(p.models)) {
    const [problem] = problemsWithPricing(prices, `models.${model}`);
    if (problem) throw bad(`models.${model}`, problem);
  }
}

/** A percentage with at most two decimals → basis points (−12.5 → −1250); NaN when it has more. */
export function percentToBp(pct: number): number {
  const bp = Math.round(pct * 100);
  return Math.abs(bp - pct * 100) < 1e-6 ? bp : NaN;
}

export class PlanBook {
  private readonly file = new Map<string, PricePlan>();
  private stored = new Map<string, PricePlan>();

  constructor(private readonly db: Db | null, filePlans: PricePlan[] = []) {
    for (const p of filePlans) this.file.set(p.id, { ...p, source: "file" });
  }

  /** A plan by id (the models file's first); null when there is none. */
  get(id: string | null | undefined): PricePlan | null {
    if (!id) return null;
    return this.file.get(id) ?? this.stored.get(id) ?? null;
  }

  list(): PricePlan[] {
    return [...this.file.values(), ...[...this.stored.values()].filter((p) => !this.file.has(p.id))].sort((a, b) => a.id.localeCompare(b.id));
  }

  isFilePlan(id: string): boolean {
    return this.file.has(id);
  }

  /** Read the stored plans again. */
  async refresh(): Promise<void> {
    if (!this.db) return;
    const rows = await listStoredPlans(this.db);
    this.stored = new Map(rows.map((p) => [p.id, p]));
  }
}

export async function listStoredPlans(tx: Tx): Promise<PricePlan[]> {
  const rows = await query<{ id: string; name: string | null; adjustment_bp: number; models: string }>(tx, sql`SELECT id, name, adjustment_bp, models FROM price_plans ORDER BY id`);
  return rows.map((r) => ({ id: r.id, name: r.name, adjustmentBp: Number(r.adjustment_bp), models: JSON.parse(r.models) as Record<string, ModelPricing>, source: "api" as const }));
}

/** Create or replace a stored plan. */
export async function putStoredPlan(tx: Tx, p: Omit<PricePlan, "source">): Promise<void> {
  await query(tx, sql`
    INSERT INTO price_plans (id, name, adjustment_bp, models) VALUES (${p.id}, ${p.name}, ${p.adjustmentBp}, ${JSON.stringify(p.models)})
    ON CONFLICT (id) DO UPDATE SET name = excluded.name, adjustment_bp = excluded.adjustment_bp, models = excluded.models, updated_at = now()`);
}

/** Delete a stored plan no account is on; false when there was none. */
export async function deleteStoredPlan(tx: Tx, id: string): Promise<boolean> {
  const inUse = await query<{ n: number }>(tx, sql`SELECT count(*)::int AS n FROM accounts WHERE plan_id = ${id}`);
  if (Number(inUse[0]?.n ?? 0) > 0) throw new ApiError(409, "conflict_error", `Plan '${id}' is in use by ${inUse[0]!.n} account(s); move them to another plan first.`, { code: "plan_in_use" });
  return (await query(tx, sql`DELETE FROM price_plans WHERE id = ${id} RETURNING id`)).length > 0;
}

/** Put an account on a plan (null: list prices). */
export async function setAccountPlan(tx: Tx, accountId: string, planId: string | null): Promise<boolean> {
  return (await query(tx, sql`UPDATE accounts SET plan_id = ${planId} WHERE id = ${accountId} RETURNING id`)).length > 0;
}
