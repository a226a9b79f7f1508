/**
 * The example plugin as a provider ships it: bundled into one .js file, which must import nothing
 * at run time, then loaded from that file and run through the SDK's contract suite.
 */
import { expect, test } from "bun:test";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runPluginContract } from "@reelay/plugin-sdk/contract";
import type { ReelayPlugin } from "@reelay/plugin-sdk";
import { realHost } from "../../test/support/plugin-context.ts";
import { buildEchoPlugin } from "./build.ts";

const out = join(mkdtempSync(join(tmpdir(), "reelay-echo-")), "echo-plugin.js");
buildEchoPlugin(out);
const load = async () => (await import(out)).default as ReelayPlugin;

test("the bundle is one ES module that imports nothing at run time", () => {
  const code = readFileSync(out, "utf8");
  expect(code).not.toMatch(/^\s*import\s/m);
  expect(code).not.toMatch(/\brequire\(/);
  expect(code).not.toMatch(/\bimport\(/);
  expect(code).toMatch(/export\s*\{[^}]*as default/);
});

runPluginContract("echo-plugin: echo", load, { capabilities: ["chat"], ctx: realHost({ modelId: "echo" }) });
runPluginContract("echo-plugin: solid-colour", load, { capabilities: ["video"], ctx: realHost({ modelId: "solid-colour" }), video: { timeoutMs: 20_000 } });
