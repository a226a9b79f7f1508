import { describeBudgets } from "./budgets.case.ts";

describeBudgets("PGlite", true);
