import { describePlans } from "./plans.case.ts";

describePlans("PGlite", true);
