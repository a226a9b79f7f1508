import { describeWindowParts } from "./windows.case.ts";
import { openPglite } from "../support.ts";

describeWindowParts("PGlite", openPglite);
