import { describeLeaseProperties } from "./leases.case.ts";
import { openPglite } from "./support.ts";

// PGlite is one connection in this process: both instances share it (statements interleave, never run at once).
describeLeaseProperties("PGlite", openPglite, { numRuns: 25, maxChunks: 8, separateConnections: false });
