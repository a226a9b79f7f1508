import { auditCases } from "./audit.case.ts";

auditCases({ pglite: false });
