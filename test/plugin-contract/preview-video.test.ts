import plugin from "../../plugins/preview-video/index.ts";
import { runPluginContract } from "./run-plugin-contract.ts";

runPluginContract("preview-video", () => plugin, { capabilities: ["video"], options: { maxConcurrency: 1 }, video: { timeoutMs: 40_000 } });
