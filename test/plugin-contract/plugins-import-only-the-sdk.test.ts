/**
 * Built-in plugins are plugins like any other: their code imports @reelay/plugin-sdk, npm packages,
 * built-ins and files of their own folder, never reelay's core (src/), its tests or another plugin.
 * (Tests beside a plugin may use the test harness; asset files embedded from node_modules are not code.)
 */
import { expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const PLUGINS = join(ROOT, "plugins");
const transpiler = new Bun.Transpiler({ loader: "ts" });
// the transpiler drops type-only imports, which couple a plugin to the core just the same
const STATEMENT = /\b(?:import|export)\s+(?:type\s+)?[^'";]*?\bfrom\s*["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']\s*\)|\bimport\s+["']([^"']+)["']/g;

function specifiers(code: string): string[] {
  const found = new Set(transpiler.scanImports(code).map((i) => i.path));
  for (const m of code.matchAll(STATEMENT)) found.add((m[1] ?? m[2] ?? m[3])!);
  return [...found];
}

/** The imports of `file` that reach outside the SDK, the plugin's own folder, packages and built-ins. */
function importsOutsideTheSdk(file: string, code: string): string[] {
  const folder = join(PLUGINS, relative(PLUGINS, file).split("/")[0]!);
  return specifiers(code).filter((spec) => {
    if (spec === "@reelay/plugin-sdk") return false;
    if (spec.startsWith("@reelay/")) return true; // the SDK's contract and testing entry points are for tests
    if (/^(node|bun):/.test(spec) || builtinModules.includes(spec)) return false;
    if (!spec.startsWith(".") && !spec.startsWith("/")) return false; // an npm package
    const target = resolve(dirname(file), spec);
    if (target.includes(`${"/"}node_modules/`)) return false; // an embedded asset (`with { type: "file" }`)
    return !target.startsWith(folder + "/");
  });
}

function pluginSources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) return pluginSources(full);
    return /\.tsx?$/.test(name) && !/\.test\.tsx?$/.test(name) && !name.endsWith(".d.ts") ? [full] : [];
  });
}

test("the check catches a plugin reaching into the core, another plugin or the tests", () => {
  const file = join(PLUGINS, "some-plugin", "index.ts");
  const code = `
    import { definePlugin } from "@reelay/plugin-sdk";
    import type { DecodedImage } from "../../src/media/index.ts";
    import { render } from "../preview-video/index.ts";
    export { fake } from "../../test/fakes/gpu-worker.ts";
    const w = await import("../../src/workers/worker-url.ts");
    import { testCall } from "@reelay/plugin-sdk/testing";
    import { x } from "./own-file.ts";
    import fs from "node:fs";
    import { createParser } from "eventsource-parser";
    import lib from "../../node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.so" with { type: "file" };`;
  expect(importsOutsideTheSdk(file, code).sort()).toEqual(["../../src/media/index.ts", "../../src/workers/worker-url.ts", "../../test/fakes/gpu-worker.ts", "../preview-video/index.ts", "@reelay/plugin-sdk/testing"]);
});

test("every built-in plugin imports only the SDK (besides packages, built-ins and its own files)", () => {
  const files = pluginSources(PLUGINS);
  expect(files.length).toBeGreaterThan(30);
  const offenders = files.flatMap((f) => importsOutsideTheSdk(f, readFileSync(f, "utf8")).map((spec) => `${relative(ROOT, f)} imports ${spec}`));
  expect(offenders).toEqual([]);
});
