import { describeWindowProperties } from "./windows.case.ts";
import { openPostgres } from "./support.ts";

describeWindowProperties("Postgres", () => openPostgres(8), { numRuns: 40, maxChunks: 10, separateConnections: true });
