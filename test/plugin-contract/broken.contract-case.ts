/**
 * The SDK's contract run against one variant of broken-plugins.ts, chosen by $BROKEN. Not a test
 * file of its own (no .test.ts): contract-catches-broken-plugins.test.ts runs it with `bun test`
 * once per variant and reads which contract tests failed.
 */
import { runPluginContract } from "@reelay/plugin-sdk/contract";
import { brokenPlugin, scenarios, VARIANTS, type Variant } from "./broken-plugins.ts";

const variant = process.env.BROKEN as Variant;
if (!VARIANTS.includes(variant)) throw new Error(`BROKEN must be one of ${VARIANTS.join(", ")}`);

runPluginContract(`${variant}: chat`, () => brokenPlugin(variant), { capabilities: ["chat"], ctx: { modelId: "chat" }, failures: scenarios });
runPluginContract(`${variant}: embeddings`, () => brokenPlugin(variant), { capabilities: ["embeddings"], ctx: { modelId: "embeddings" }, failures: scenarios });
runPluginContract(`${variant}: video`, () => brokenPlugin(variant), { capabilities: ["video"], ctx: { modelId: "video" }, failures: scenarios, video: { timeoutMs: 5_000 } });
