import { describeWindowProperties } from "./windows.case.ts";
import { openPglite } from "./support.ts";

// PGlite is one connection in this process: both instances share it (statements interleave, never run at once).
describeWindowProperties("PGlite", openPglite, { numRuns: 15, maxChunks: 8, separateConnections: false });
