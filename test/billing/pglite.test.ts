import { describeBillingInvariants } from "./invariants.case.ts";
import { openPglite } from "./support.ts";

// PGlite is one connection: Promise.all interleaves statements but never runs two at once.
describeBillingInvariants("PGlite", openPglite, { numRuns: 20, maxCommands: 25 });
