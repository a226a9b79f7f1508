/**
 * Budgets and price plans in the admin API (REELAY_ADMIN_TOKEN): a key's and an account's budgets
 * (PUT replaces the set, GET shows each with its current window), price plans (the models file's,
 * read-only, and the admin API's), and the plan an account is on. Enforcement and prices are the
 * billing module's (src/billing/budgets.ts, plans.ts); docs/budgets-and-plans.md shows them in use.
 */
import { Elysia } from "elysia";
import { sql } from "drizzle-orm";
import type { AppDeps } from "../../deps.ts";
import { requireOperator } from "../../http/require-operator.ts";
import { audited, type AuditContext, type AuditEntry } from "../../audit/audit-log.ts";
import type { Tx } from "../../db/index.ts";
import { query } from "../../db/index.ts";
import { ApiError, badRequest } from "../../errors.ts";
import { ErrorEnvelope } from "../../http/schemas.ts";
import { getAccount } from "../../accounts/accounts.ts";
import { getKey } from "../../accounts/api-keys.ts";
import { budgetError, budgetSpecOf, budgetViews, normaliseBudgets, setBudgetsIn, type BudgetSpec } from "../../billing/budgets.ts";
import { checkPlan, deleteStoredPlan, percentToBp, putStoredPlan, setAccountPlan, type PricePlan } from "../../billing/plans.ts";
import { AccountPlanBody, AccountPlanView, BudgetList, BudgetsBody, PlanBody, PlanList, PlanView } from "./model.ts";

const adminErrors = { 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope };
const security = [{ admin: [] }];
const BUDGETS_DOC =
  "A budget limits what the key (or the whole account, every key) may spend per window: `day` from midnight in `timezone`, `week` from Monday, `month` from the 1st, or `lifetime` (never resets). " +
  "`models` narrows it to requests for some models. A request is approved only if the balance and every window it counts in (its key's and its account's) can take its worst case; " +
  "otherwise 402 `budget_exceeded` names the window, what is left and `resets_at` (with Retry-After). A charge counts in the window its request was approved in.";

export const planView = (p: PricePlan, accounts?: number) => ({
  id: p.id, object: "price_plan" as const, name: p.name, adjustment_percent: p.adjustmentBp / 100, models: p.models as Record<string, Record<string, number>>, source: p.source,
  ...(accounts !== undefined ? { accounts } : {}),
});

export const budgetAdminRoutes = (deps: AppDeps) => {
  const db = deps.database.db;
  const engine = deps.billing;
  const list = (data: Awaited<ReturnType<typeof budgetViews>>) => ({ object: "list" as const, data });
  const planOr404 = (id: string) => {
    const p = engine.plans.get(id);
    if (!p) throw new ApiError(404, "not_found_error", `No price plan '${id}'.`, { code: "plan_not_found", param: "plan" });
    return p;
  };
  const accountsOn = async () => new Map((await query<{ plan_id: string; n: number }>(db, sql`SELECT plan_id, count(*)::int AS n FROM accounts WHERE plan_id IS NOT NULL GROUP BY plan_id`)).map((r) => [r.plan_id, Number(r.n)]));
  const inTx = <T>(audit: AuditContext, work: (tx: Tx, record: (e: AuditEntry) => Promise<void>) => Promise<T>) => audited({ db, logger: deps.logger }, audit, work);
  /** set an owner's budgets and record the change, in one transaction */
  const putBudgets = async (audit: AuditContext, owner: { accountId: string; keyId: string | null }, specs: BudgetSpec[]) => {
    const wanted = normaliseBudgets(specs);
    const at = engine.now();
    return inTx(audit, async (tx, record) => {
      await getAccount(tx, owner.accountId);
      const before = await budgetViews(tx, owner.accountId, owner.keyId ? { keyId: owner.keyId } : { account: true }, at);
      const views = await setBudgetsIn(tx, owner, wanted, at);
      await record({ action: "budgets.set", target: owner.keyId ? { type: "key", id: owner.keyId } : { type: "account", id: owner.accountId }, before: before.map(budgetSpecOf), after: views.map(budgetSpecOf) });
      return views;
    }).catch((e) => Promise.reject(budgetError(e)));
  };
  return new Elysia({ prefix: "/admin", tags: ["admin"] })
    .use(requireOperator(deps))
    .put("/accounts/:id/budgets", async ({ params, body, audit }) => {
      await engine.sync(); // the answer shows this instance's settlements
      const views = await putBudgets(audit, { accountId: params.id, keyId: null }, body.budgets);
      engine.windows.invalidate(params.id);
      return list(views);
    }, {
      body: BudgetsBody,
      detail: { summary: "Set an account's budgets", description: `${BUDGETS_DOC} The account's budgets apply to every key of the account.`, security },
      response: { 200: BudgetList, ...adminErrors },
    })
    .get("/accounts/:id/budgets", async ({ params }) => {
      await getAccount(db, params.id);
      await engine.sync();
      return list(await db.transaction((tx) => budgetViews(tx, params.id, { account: true }, engine.now())));
    }, {
      detail: { summary: "An account's budgets", description: "Each budget with its current window: `spent`, `reserved` (requests in flight), `remaining`, `resets_at`, and the thresholds reached in it.", security },
      response: { 200: BudgetList, ...adminErrors },
    })
    .put("/keys/:id/budgets", async ({ params, body, audit }) => {
      const key = await getKey(db, params.id);
      await engine.sync();
      const views = await putBudgets(audit, { accountId: key.accountId, keyId: key.id }, body.budgets);
      engine.windows.invalidate(key.accountId);
      return list(views);
    }, {
      body: BudgetsBody,
      detail: { summary: "Set a key's budgets", description: `${BUDGETS_DOC} The key's requests also count in its account's budgets.`, security },
      response: { 200: BudgetList, ...adminErrors },
    })
    .get("/keys/:id/budgets", async ({ params }) => {
      const key = await getKey(db, params.id);
      await engine.sync();
      return list(await db.transaction((tx) => budgetViews(tx, key.accountId, { keyId: key.id }, engine.now())));
    }, {
      detail: { summary: "A key's budgets", description: "Each budget with its current window: `spent`, `reserved` (requests in flight), `remaining`, `resets_at`, and the thresholds reached in it.", security },
      response: { 200: BudgetList, ...adminErrors },
    })
    .get("/plans", async () => {
      const on = await accountsOn();
      return { object: "list" as const, data: engine.plans.list().map((p) => planView(p, on.get(p.id) ?? 0)) };
    }, {
      detail: { summary: "List price plans", description: "Plans from the models file (`source: file`, read-only here) and from this API (`source: api`).", security },
      response: { 200: PlanList, ...adminErrors },
    })
    .get("/plans/:id", async ({ params }) => planView(planOr404(params.id), (await accountsOn()).get(params.id) ?? 0), {
      detail: { summary: "Get a price plan", security },
      response: { 200: PlanView, ...adminErrors },
    })
    .put("/plans/:id", async ({ params, body, audit }) => {
      if (engine.plans.isFilePlan(params.id)) throw new ApiError(409, "conflict_error", `Plan '${params.id}' is defined in the models file; change it there.`, { code: "plan_in_models_file" });
      const adjustmentBp = percentToBp(body.adjustment_percent ?? 0);
      const plan = { id: params.id, name: body.name ?? null, adjustmentBp, models: body.models ?? {} };
      try {
        checkPlan(plan, "");
      } catch (e) {
        if (e instanceof ApiError && e.param === "id") throw badRequest("A plan id is 1 to 64 letters, digits, '.', '_', ':' or '-', starting with a letter or digit.", "id", "invalid_plan");
        throw e;
      }
      for (const m of Object.keys(plan.models)) if (!deps.registry.get(m)) throw badRequest(`models.${m}: no such model.`, `models.${m}`, "invalid_plan");
      const before = engine.plans.get(params.id);
      await inTx(audit, async (tx, record) => {
        await putStoredPlan(tx, plan);
        await record({ action: before ? "plan.update" : "plan.create", target: { type: "plan", id: params.id }, before: before ? planView(before) : null, after: planView({ ...plan, source: "api" }) });
      });
      await engine.plans.refresh();
      return planView(planOr404(params.id), (await accountsOn()).get(params.id) ?? 0);
    }, {
      body: PlanBody,
      detail: {
        summary: "Create or replace a price plan",
        description: "`adjustment_percent` applies to every model's list prices; `models` gives prices that replace a model's (taken as they are). Costs are computed exactly and rounded once per request, up (docs/budgets-and-plans.md). Other instances apply a change within about 5 s.",
        security,
      },
      response: { 200: PlanView, 409: ErrorEnvelope, ...adminErrors },
    })
    .delete("/plans/:id", async ({ params, audit }) => {
      if (engine.plans.isFilePlan(params.id)) throw new ApiError(409, "conflict_error", `Plan '${params.id}' is defined in the models file; remove it there.`, { code: "plan_in_models_file" });
      const p = planOr404(params.id);
      await inTx(audit, async (tx, record) => {
        if (await deleteStoredPlan(tx, params.id)) await record({ action: "plan.delete", target: { type: "plan", id: params.id }, before: planView(p), after: null });
      });
      await engine.plans.refresh();
      return planView(p, 0);
    }, {
      detail: { summary: "Delete a price plan no account is on", security },
      response: { 200: PlanView, 409: ErrorEnvelope, ...adminErrors },
    })
    .put("/accounts/:id/plan", async ({ params, body, audit }) => {
      if (body.plan !== null) planOr404(body.plan);
      await inTx(audit, async (tx, record) => {
        const before = await getAccount(tx, params.id);
        await setAccountPlan(tx, params.id, body.plan);
        await record({ action: "account.plan", target: { type: "account", id: params.id }, before: { plan: before.planId }, after: { plan: body.plan } });
      });
      deps.auth.evictAccount(params.id);
      return { object: "account_plan" as const, account_id: params.id, plan: body.plan === null ? null : planView(planOr404(body.plan)) };
    }, {
      body: AccountPlanBody,
      detail: { summary: "Put an account on a price plan", description: "Its requests are priced on the plan from now on (on other instances within the key cache time, 5 s by default); null: list prices.", security },
      response: { 200: AccountPlanView, ...adminErrors },
    });
};
