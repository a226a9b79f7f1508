/**
 * CLI for budgets and price plans (the same as the admin API's routes; docs/budgets-and-plans.md):
 *
 *   reelay budgets set --key KEY_ID --budget day:5000000 --budget month:50000000:Europe/Paris
 *   reelay budgets set --account ACCOUNT_ID --budget lifetime:20000000 --thresholds 50,80,100
 *   reelay budgets set --key KEY_ID --budget day:1000000:UTC:gpt-4o,gpt-4o-mini   (models)
 *   reelay budgets show --key KEY_ID | --account ACCOUNT_ID
 *   reelay budgets clear --key KEY_ID | --account ACCOUNT_ID
 *   reelay plans list | plans set PLAN_ID [--name NAME] [--adjust=PERCENT] [--models-json JSON] | plans delete PLAN_ID
 *   reelay accounts plan ACCOUNT_ID PLAN_ID|none
 *
 * A running server applies a change on its next reservation for the account (budgets) or within
 * its key cache and plan refresh time (plans, ~5 s).
 */
import { parseArgs } from "node:util";
import { getAccount } from "../accounts/accounts.ts";
import { getKey } from "../accounts/api-keys.ts";
import { budgetError, budgetSpecOf, budgetViews, normaliseBudgets, setBudgetsIn, type BudgetSpec } from "../billing/budgets.ts";
import { checkPlan, deleteStoredPlan, listStoredPlans, percentToBp, putStoredPlan, setAccountPlan, type PricePlan } from "../billing/plans.ts";
import { PERIODS, type Period } from "../billing/window-statements.ts";
import type { Config } from "../config.ts";
import type { Db } from "../db/index.ts";
import type { Logger } from "../logger.ts";
import { cliAudited } from "./cli-audit.ts";
import { UsageError, type Command } from "./commands.ts";

function parse(args: string[], options: Record<string, { type: "string"; multiple?: boolean }>) {
  try {
    const { values, positionals } = parseArgs({ args, options, allowPositionals: true, strict: true });
    return { values: values as Record<string, string | string[] | undefined>, positionals };
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

/** PERIOD:LIMIT[:TIMEZONE[:MODEL,MODEL]] */
export function budgetSpec(raw: string, thresholds: number[] | undefined): BudgetSpec {
  const [period, limit, timezone, models] = raw.split(":");
  if (!PERIODS.includes(period as Period)) throw new UsageError(`--budget ${raw}: the period is one of ${PERIODS.join(", ")}`);
  if (!/^\d+$/.test(limit ?? "")) throw new UsageError(`--budget ${raw}: the limit is an integer of micro-dollars (day:5000000 is $5 a day)`);
  return { period: period as Period, limit: Number(limit), ...(timezone ? { timezone } : {}), ...(models ? { models: models.split(",").filter(Boolean) } : {}), ...(thresholds ? { thresholds } : {}) };
}

async function owner(db: Db, v: Record<string, string | string[] | undefined>) {
  if (typeof v.key === "string" && typeof v.account === "string") throw new UsageError("give --key or --account, not both");
  if (typeof v.key === "string") {
    const k = await getKey(db, v.key);
    return { accountId: k.accountId, keyId: k.id };
  }
  if (typeof v.account === "string") return { accountId: (await getAccount(db, v.account)).id, keyId: null };
  throw new UsageError("missing --key KEY_ID or --account ACCOUNT_ID");
}

/** replace an owner's budgets and record the change, in one transaction (as PUT /admin/…/budgets) */
async function putBudgets(db: Db, logger: Logger | undefined, owner: { accountId: string; keyId: string | null }, specs: BudgetSpec[]) {
  const wanted = normaliseBudgets(specs);
  const at = Date.now();
  return cliAudited(db, logger, async (tx, record) => {
    const before = await budgetViews(tx, owner.accountId, owner.keyId ? { keyId: owner.keyId } : { account: true }, at);
    const views = await setBudgetsIn(tx, owner, wanted, at);
    await record({ action: "budgets.set", target: owner.keyId ? { type: "key", id: owner.keyId } : { type: "account", id: owner.accountId }, before: before.map(budgetSpecOf), after: views.map(budgetSpecOf) });
    return views;
  }).catch((e) => Promise.reject(budgetError(e)));
}

const planView = (p: PricePlan) => ({ id: p.id, name: p.name, adjustment_percent: p.adjustmentBp / 100, models: p.models, source: p.source });
const OWNER = { key: { type: "string" as const }, account: { type: "string" as const } };

export const BUDGET_COMMANDS: Record<string, { usage: string; run: Command }> = {
  "budgets set": {
    usage: "budgets set (--key KEY_ID | --account ACCOUNT_ID) --budget PERIOD:LIMIT[:TIMEZONE[:MODEL,…]] … [--thresholds 80,100]   (replaces the set)",
    run: async (db, args, _config, logger) => {
      const { values } = parse(args, { ...OWNER, budget: { type: "string", multiple: true }, thresholds: { type: "string" } });
      const thresholds = typeof values.thresholds === "string" ? values.thresholds.split(",").map(Number) : undefined;
      const specs = ((values.budget as string[] | undefined) ?? []).map((b) => budgetSpec(b, thresholds));
      if (specs.length === 0) throw new UsageError("give at least one --budget (budgets clear removes them all)");
      return putBudgets(db, logger, await owner(db, values), specs);
    },
  },
  "budgets show": {
    usage: "budgets show (--key KEY_ID | --account ACCOUNT_ID)",
    run: async (db, args) => {
      const o = await owner(db, parse(args, OWNER).values);
      return db.transaction((tx) => budgetViews(tx, o.accountId, o.keyId === null ? { account: true } : { keyId: o.keyId }, Date.now()));
    },
  },
  "budgets clear": {
    usage: "budgets clear (--key KEY_ID | --account ACCOUNT_ID)",
    run: async (db, args, _config, logger) => putBudgets(db, logger, await owner(db, parse(args, OWNER).values), []),
  },
  "plans list": {
    usage: "plans list",
    run: async (db, _args, config: Config) => [...config.plans.map((p) => planView({ ...p, source: "file" })), ...(await listStoredPlans(db)).filter((p) => !config.plans.some((f) => f.id === p.id)).map(planView)],
  },
  "plans set": {
    usage: "plans set PLAN_ID [--name NAME] [--adjust=PERCENT] [--models-json '{\"MODEL\":{\"inputPerMillion\":N}}']",
    run: async (db, args, config: Config, logger) => {
      const { values, positionals } = parse(args, { name: { type: "string" }, adjust: { type: "string" }, "models-json": { type: "string" } });
      const id = positionals[0];
      if (!id) throw new UsageError("missing PLAN_ID");
      if (config.plans.some((p) => p.id === id)) throw new UsageError(`plan ${id} is defined in the models file; change it there`);
      let models: PricePlan["models"] = {};
      try {
        if (typeof values["models-json"] === "string") models = JSON.parse(values["models-json"]);
      } catch {
        throw new UsageError("--models-json must be JSON: {\"model id\": {\"inputPerMillion\": 1000000}}");
      }
      const plan = { id, name: typeof values.name === "string" ? values.name : null, adjustmentBp: percentToBp(Number(values.adjust ?? 0)), models };
      checkPlan(plan, "");
      const after = planView({ ...plan, source: "api" });
      await cliAudited(db, logger, async (tx, record) => {
        const before = (await listStoredPlans(tx)).find((p) => p.id === id);
        await putStoredPlan(tx, plan);
        await record({ action: before ? "plan.update" : "plan.create", target: { type: "plan", id }, before: before ? planView(before) : null, after });
      });
      return after;
    },
  },
  "plans delete": {
    usage: "plans delete PLAN_ID",
    run: async (db, args, _config, logger) => {
      const id = parse(args, {}).positionals[0];
      if (!id) throw new UsageError("missing PLAN_ID");
      const deleted = await cliAudited(db, logger, async (tx, record) => {
        const before = (await listStoredPlans(tx)).find((p) => p.id === id);
        if (!before || !(await deleteStoredPlan(tx, id))) return false;
        await record({ action: "plan.delete", target: { type: "plan", id }, before: planView(before), after: null });
        return true;
      });
      return { id, deleted };
    },
  },
  "accounts plan": {
    usage: "accounts plan ACCOUNT_ID PLAN_ID|none",
    run: async (db, args, config: Config, logger) => {
      const [accountId, plan] = parse(args, {}).positionals;
      if (!accountId || !plan) throw new UsageError("usage: accounts plan ACCOUNT_ID PLAN_ID|none");
      const planId = plan === "none" ? null : plan;
      if (planId && !config.plans.some((p) => p.id === planId) && !(await listStoredPlans(db)).some((p) => p.id === planId)) throw new UsageError(`no price plan ${planId}`);
      await cliAudited(db, logger, async (tx, record) => {
        const before = await getAccount(tx, accountId);
        await setAccountPlan(tx, accountId, planId);
        await record({ action: "account.plan", target: { type: "account", id: accountId }, before: { plan: before.planId }, after: { plan: planId } });
      });
      return { account_id: accountId, plan: planId };
    },
  },
};
