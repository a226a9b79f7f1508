import { runPluginContract } from "@reelay/plugin-sdk/contract";
import plugin from "../../plugins/preview-video/index.ts";
import { realHost } from "../support/plugin-context.ts";

runPluginContract("preview-video", () => plugin, { capabilities: ["video"], options: { maxConcurrency: 1 }, ctx: realHost(), video: { timeoutMs: 40_000 } });
