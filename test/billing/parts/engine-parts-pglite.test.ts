import { describeEngineParts } from "./engine-parts.case.ts";
import { openPglite } from "../support.ts";

describeEngineParts("PGlite", openPglite);
