import { describeWindowParts } from "./windows.case.ts";
import { openPostgres } from "../support.ts";

describeWindowParts("Postgres", () => openPostgres(4));
