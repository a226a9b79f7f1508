/** Request and response schemas of budgets and price plans (admin API, /v1/account). */
import { t } from "elysia";
import { JsonInteger, MAX_CREDITS_PER_OPERATION } from "../../http/schemas.ts";

export const BudgetSpecBody = t.Object({
  period: t.UnionEnum(["day", "week", "month", "lifetime"], { description: "day (from midnight in `timezone`), week (from Monday), month (from the 1st), or lifetime (never resets: a prepaid cap)" }),
  limit: JsonInteger({ minimum: 0, maximum: MAX_CREDITS_PER_OPERATION, description: "micro-dollars per window" }),
  timezone: t.Optional(t.String({ minLength: 1, maxLength: 64, description: "IANA timezone the window follows (default UTC)" })),
  models: t.Optional(t.Nullable(t.Array(t.String({ minLength: 1, maxLength: 200 }), { maxItems: 100, description: "count only requests for these model ids (omit or null: every model)" }))),
  thresholds: t.Optional(t.Array(JsonInteger({ minimum: 1, maximum: 100 }), { maxItems: 10, description: "percents of the limit at which `budget.threshold_reached` is sent, once per window each (default [80, 100])" })),
});

export const BudgetsBody = t.Object(
  { budgets: t.Array(BudgetSpecBody, { maxItems: 20, description: "the whole set: it replaces the budgets there were ([] removes them all)" }) },
  { examples: [{ budgets: [{ period: "month", limit: 50_000_000, timezone: "Europe/Paris" }, { period: "day", limit: 5_000_000, models: ["gpt-4o"] }] }] },
);

const exampleBudget = {
  id: "bud_7fQm", scope: "key", key_id: "key_Qw3r", period: "month", limit: 50_000_000, timezone: "Europe/Paris", models: null, thresholds: [80, 100],
  window: { id: "bud_7fQm@1788213600", starts_at: "2026-08-31T22:00:00.000Z", resets_at: "2026-09-30T22:00:00.000Z", spent: 41_250_000, reserved: 150_000, remaining: 8_600_000, alerts: [{ threshold: 80, reached_at: "2026-09-24T16:02:11.000Z" }] },
};

export const BudgetView = t.Object(
  {
    id: t.String(),
    scope: t.UnionEnum(["account", "key"]),
    key_id: t.Nullable(t.String()),
    period: t.UnionEnum(["day", "week", "month", "lifetime"]),
    limit: t.Integer({ description: "micro-dollars per window" }),
    timezone: t.String(),
    models: t.Nullable(t.Array(t.String())),
    thresholds: t.Array(t.Integer()),
    window: t.Object({
      id: t.String(),
      starts_at: t.String(),
      resets_at: t.Nullable(t.String({ description: "when the next window starts (null: lifetime, never)" })),
      spent: t.Integer({ description: "micro-dollars charged for requests approved in this window" }),
      reserved: t.Integer({ description: "worst cases of the requests in flight that count in it" }),
      remaining: t.Integer({ description: "limit − spent − reserved: what requests may still reserve" }),
      alerts: t.Array(t.Object({ threshold: t.Integer(), reached_at: t.String() }), { description: "thresholds reached in this window (each sent once as `budget.threshold_reached`)" }),
    }),
  },
  { examples: [exampleBudget] },
);

export const BudgetList = t.Object({ object: t.Literal("list"), data: t.Array(BudgetView) }, { examples: [{ object: "list", data: [exampleBudget] }] });

const Prices = t.Object({
  inputPerMillion: t.Optional(JsonInteger({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
  outputPerMillion: t.Optional(JsonInteger({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
  cachedInputPerMillion: t.Optional(JsonInteger({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
  cacheWritePerMillion: t.Optional(JsonInteger({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
  perSecond: t.Optional(JsonInteger({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
  perSecondBySize: t.Optional(t.Record(t.String(), JsonInteger({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }), { description: "per second of video at a size (\"1280x720\")" })),
}, { description: "micro-dollars per million tokens, or per second of video; taken as they are (not adjusted)" });

export const PlanBody = t.Object(
  {
    name: t.Optional(t.Nullable(t.String({ maxLength: 200 }))),
    adjustment_percent: t.Optional(t.Number({ minimum: -100, maximum: 1000, description: "applied to every model's list prices (−10: 10 % off); at most two decimals" })),
    models: t.Optional(t.Record(t.String(), Prices, { description: "per-model prices that replace the list prices" })),
  },
  { examples: [{ name: "Reseller gold", adjustment_percent: -15, models: { "gpt-4o": { inputPerMillion: 2_000_000, outputPerMillion: 8_000_000 } } }] },
);

export const PlanView = t.Object(
  {
    id: t.String(),
    object: t.Literal("price_plan"),
    name: t.Nullable(t.String()),
    adjustment_percent: t.Number(),
    models: t.Record(t.String(), t.Record(t.String(), t.Unknown())),
    source: t.UnionEnum(["file", "api"], { description: "file: defined in the models file (read-only here)" }),
    accounts: t.Optional(t.Integer({ description: "accounts on the plan" })),
  },
  { examples: [{ id: "gold", object: "price_plan", name: "Reseller gold", adjustment_percent: -15, models: { "gpt-4o": { inputPerMillion: 2_000_000 } }, source: "api" }] },
);

export const PlanList = t.Object({ object: t.Literal("list"), data: t.Array(PlanView) });

export const AccountPlanBody = t.Object({ plan: t.Nullable(t.String({ minLength: 1, maxLength: 64, description: "a plan id, or null for the list prices" })) }, { examples: [{ plan: "gold" }] });

export const AccountPlanView = t.Object({ object: t.Literal("account_plan"), account_id: t.String(), plan: t.Nullable(PlanView) });
