import { describeEngine } from "./engine.case.ts";
import { openPglite } from "./support.ts";

describeEngine("PGlite", openPglite);
