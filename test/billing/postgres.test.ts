import { describeBillingInvariants } from "./invariants.case.ts";
import { openPostgres } from "./support.ts";

describeBillingInvariants("Postgres", () => openPostgres(20), { numRuns: 40, maxCommands: 40 });
