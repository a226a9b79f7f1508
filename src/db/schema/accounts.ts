import { sql } from "drizzle-orm";
import { bigint, check, integer, pgTable, text, timestamp } from "drizzle-orm/pg-core";

/** An account owns credits, keys, jobs and usage. Money columns are integer micro-dollars. */
export const accounts = pgTable(
  "accounts",
  {
    /** "acct_" + random */
    id: text("id").primaryKey(),
    /** human label chosen by the operator */
    name: text("name").notNull(),
    /** credits owned; changed only by the billing module, always equal to the sum of ledger.amount */
    balance: bigint("balance", { mode: "number" }).notNull().default(0),
    /** credits reserved by open holds; available = balance - held */
    held: bigint("held", { mode: "number" }).notNull().default(0),
    /** rate-limit overrides for the whole account (null: the configured default) */
    rpmLimit: integer("rpm_limit"),
    tpmLimit: integer("tpm_limit"),
    videoConcurrencyLimit: integer("video_concurrency_limit"),
    /** bumped by every change of the account's or its keys' budgets: a lease or cached set of windows from before is stale */
    budgetsVersion: integer("budgets_version").notNull().default(0),
    /** the price plan the account pays (null: list prices); a models-file or price_plans id */
    planId: text("plan_id"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check("accounts_balance_nonnegative", sql`${t.balance} >= 0`),
    check("accounts_held_within_balance", sql`${t.held} >= 0 AND ${t.held} <= ${t.balance}`),
  ],
);
