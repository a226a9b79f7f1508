import { describeEngineParts } from "./engine-parts.case.ts";
import { openPostgres } from "../support.ts";

describeEngineParts("Postgres", () => openPostgres(8));
