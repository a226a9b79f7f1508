import { describePlans } from "./plans.case.ts";

describePlans("Postgres", false);
