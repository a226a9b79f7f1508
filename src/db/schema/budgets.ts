import { sql } from "drizzle-orm";
import { bigint, check, index, integer, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";
import { accounts } from "./accounts.ts";
import { apiKeys } from "./keys.ts";

/**
 * A spend limit on a key or an account (src/billing/windows/, docs/budgets-and-plans.md). It is
 * enforced per calendar window (`budget_windows`): a request is approved only when every window
 * that applies to it can take its worst case.
 */
export const budgets = pgTable(
  "budgets",
  {
    /** "bud_" + random */
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id),
    /** the key it limits; null: the whole account (every key) */
    keyId: text("key_id").references(() => apiKeys.id),
    /** day | week (from Monday) | month | lifetime (never resets) */
    period: text("period", { enum: ["day", "week", "month", "lifetime"] }).notNull(),
    /** micro-dollars per window */
    limitAmount: bigint("limit_amount", { mode: "number" }).notNull(),
    /** IANA name; a day starts at midnight there */
    timezone: text("timezone").notNull().default("UTC"),
    /** model ids the budget counts (null: every model) */
    models: text("models").array(),
    /** percentages of the limit at which `budget.threshold_reached` is sent, once per window each */
    thresholds: integer("thresholds").array().notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    /** replaced by a PUT that no longer lists it: no new request counts in it (its windows stay, settling what they reserved) */
    removedAt: timestamp("removed_at", { withTimezone: true }),
  },
  (t) => [
    check("budgets_limit_nonnegative", sql`${t.limitAmount} >= 0`),
    index("budgets_account_active_idx").on(t.accountId).where(sql`${t.removedAt} IS NULL`),
  ],
);

/**
 * One period of a budget: what was charged in it and what is reserved in it now. A request
 * reserves its worst case in every window that applies to it when it is approved (holds.windows),
 * and its charge counts in those windows, whenever it settles. spent + held <= limit_amount is
 * the invariant the credit engine keeps (only a limit lowered by an operator can break it).
 */
export const budgetWindows = pgTable(
  "budget_windows",
  {
    /** "<budget id>@<start, unix seconds>" (lifetime: "@life"): every instance names a window alike */
    id: text("id").primaryKey(),
    budgetId: text("budget_id").notNull().references(() => budgets.id),
    accountId: text("account_id").notNull(),
    startsAt: timestamp("starts_at", { withTimezone: true }).notNull(),
    /** null: lifetime */
    endsAt: timestamp("ends_at", { withTimezone: true }),
    /** the budget's limit, micro-dollars (a PUT that changes the limit updates windows not yet over) */
    limitAmount: bigint("limit_amount", { mode: "number" }).notNull(),
    /** micro-dollars charged by requests approved in the window */
    spent: bigint("spent", { mode: "number" }).notNull().default(0),
    /** micro-dollars reserved by open holds and leases listing the window */
    held: bigint("held", { mode: "number" }).notNull().default(0),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check("budget_windows_amounts_nonnegative", sql`${t.spent} >= 0 AND ${t.held} >= 0`),
    index("budget_windows_budget_idx").on(t.budgetId, t.startsAt),
  ],
);

/**
 * A threshold a window's spending reached: inserted by the settlement that crossed it (one row per
 * window and threshold, ever), then turned into `budget.threshold_reached` webhook deliveries by
 * the webhook module (enqueued_at set in the same transaction).
 */
export const budgetAlerts = pgTable(
  "budget_alerts",
  {
    windowId: text("window_id").notNull(),
    /** percent of the limit */
    threshold: integer("threshold").notNull(),
    accountId: text("account_id").notNull(),
    budgetId: text("budget_id").notNull(),
    /** micro-dollars spent in the window when the threshold was crossed */
    spent: bigint("spent", { mode: "number" }).notNull(),
    limitAmount: bigint("limit_amount", { mode: "number" }).notNull(),
    reachedAt: timestamp("reached_at", { withTimezone: true }).notNull().defaultNow(),
    /** when its webhook deliveries were queued (null: not yet) */
    enqueuedAt: timestamp("enqueued_at", { withTimezone: true }),
  },
  (t) => [
    primaryKey({ columns: [t.windowId, t.threshold] }),
    index("budget_alerts_pending_idx").on(t.reachedAt).where(sql`${t.enqueuedAt} IS NULL`),
    index("budget_alerts_account_idx").on(t.accountId, t.reachedAt),
  ],
);

/**
 * Price plans defined through the admin API (the models file may define more under `plans:`; those
 * are not stored). An account on a plan pays its prices (src/billing/plans.ts).
 */
export const pricePlans = pgTable("price_plans", {
  id: text("id").primaryKey(),
  name: text("name"),
  /** adjustment of every model's prices in basis points of a percent (-1000 = -10 %) */
  adjustmentBp: integer("adjustment_bp").notNull().default(0),
  /** per-model price overrides: { "<model id>": { "inputPerMillion": 100000, … } }, taken as they are */
  models: text("models").notNull().default("{}"),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});
