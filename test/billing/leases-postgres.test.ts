import { describeLeaseProperties } from "./leases.case.ts";
import { openPostgres } from "./support.ts";

describeLeaseProperties("Postgres", () => openPostgres(8), { numRuns: 60, maxChunks: 10, separateConnections: true });
