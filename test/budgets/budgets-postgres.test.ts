import { describeBudgets } from "./budgets.case.ts";

describeBudgets("Postgres", false);
