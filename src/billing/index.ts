/**
 * The billing module: the only code that changes balances.
 *
 *  - credits.ts: grants, operator adjustments, balance reads (client and operator views)
 *  - exact-holds.ts: one hold per request or job, and the sweeper of expired holds and leases
 *  - settle-batch.ts: the one statement that settles or releases requests' and jobs' money
 *  - engine.ts: approves requests from credit leases in memory and settles them in batches
 *    (its parts: leases.ts, exact-approvals.ts, settlement-queue.ts, windows.ts, db-health.ts)
 *  - budgets.ts / window-statements.ts / budget-refusal.ts: spend limits per key and account in
 *    calendar windows, reserved and charged like the balance; the 402 budget_exceeded
 *  - plans.ts / price.ts: what an account pays (price plans), the one price formula
 *  - charge.ts / job-charge.ts: the one charge lifecycle chat, embeddings and video use
 *
 * Invariants (checked by tests): per account sum(ledger.amount) == balance,
 * sum(ledger.held_change) == held == sum(open holds and leases), 0 <= held <= balance;
 * each request or job is charged at most once (one usage row per ref).
 */
export { accountNotFound, adjust, clientBalance, getBalance, grant, leasedIdle, type Balance, type OperatorBalance } from "./credits.ts";
export { hold, holdMany, sweepExpiredHolds, type GroupHold, type Hold } from "./exact-holds.ts";
export { settleBatch, settleOne, type Settlement, type SettlementResult, type SingleSettlement } from "./settle-batch.ts";
export { DEFAULT_BATCH_PERCENT, effectiveRate, effectiveSizeRates, priceOf, videoRate, worstPriceOf, type BillableUsage, type EffectivePricing } from "./price.ts";
export { applyPlan, batchPlan, PlanBook, pricingFacts, type PricePlan } from "./plans.ts";
export { budgetViews, setBudgets, type BudgetSpec, type BudgetView } from "./budgets.ts";
export { budgetExceeded, StaleBudgets } from "./budget-refusal.ts";
export { CreditEngine, unavailable, type Approval } from "./engine.ts";
export type { BillingConfig } from "../config.ts";
export { Charge, openCharge, settlementOf, type ChargeLedger, type ChargeSpec, type OutcomeFacts, type SettleOutcome } from "./charge.ts";
export { JobCharge, jobCharge, openJobCharge, type JobChargeSpec } from "./job-charge.ts";
export { ABSURD_TOKENS, credibleCacheCounts, credibleCount, joinAnomalies, type CredibleCacheCounts, type CredibleCount } from "./usage-sanity.ts";
