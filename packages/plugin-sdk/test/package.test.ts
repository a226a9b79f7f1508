/**
 * The SDK is a package of its own: it compiles alone (no reelay core), imports only its declared
 * dependencies, says which version it is, and `npm pack` gives a tarball with the built JS, the type
 * declarations and the sources, and nothing else.
 */
import { expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { join } from "node:path";
import { SDK_VERSION } from "../src/index.ts";

const PKG = join(import.meta.dir, "..");
const manifest = JSON.parse(readFileSync(join(PKG, "package.json"), "utf8"));
const bin = (name: string) => join(PKG, "../../node_modules/.bin", name);

test("package.json and SDK_VERSION agree", () => {
  expect(manifest.name).toBe("@reelay/plugin-sdk");
  expect(manifest.version).toBe(SDK_VERSION);
});

test("its sources import nothing but each other, built-ins and its dependencies", () => {
  const files = (dir: string): string[] => readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? files(join(dir, n)) : [join(dir, n)]));
  const allowed = new Set([...Object.keys(manifest.dependencies), "@sinclair/typebox/value", "@sinclair/typebox/errors"]);
  const outside = files(join(PKG, "src")).flatMap((f) => {
    const specs = new Bun.Transpiler({ loader: "ts" }).scanImports(readFileSync(f, "utf8")).map((i) => i.path);
    return specs.filter((s) => !s.startsWith("./") && !s.startsWith("../") && !/^(node|bun):/.test(s) && !builtinModules.includes(s) && !allowed.has(s)).map((s) => `${f}: ${s}`);
  });
  expect(outside).toEqual([]);
  expect(readFileSync(join(PKG, "src/index.ts"), "utf8")).not.toMatch(/\.\.\/\.\.\//);
});

test("it type-checks on its own, and the official openai types fit its chat types", () => {
  const r = Bun.spawnSync([bin("tsc"), "-p", PKG], { stdout: "pipe", stderr: "pipe" });
  expect({ exit: r.exitCode, out: r.stdout.toString() + r.stderr.toString() }).toEqual({ exit: 0, out: "" });
}, 60_000);

test("npm pack: built JS, declarations and sources; no tests", () => {
  const r = Bun.spawnSync(["npm", "pack", "--dry-run", "--json"], { cwd: PKG, stdout: "pipe", stderr: "pipe" });
  expect(r.exitCode).toBe(0);
  const [pack] = JSON.parse(r.stdout.toString()) as Array<{ name: string; version: string; files: Array<{ path: string }> }>;
  const paths = pack!.files.map((f) => f.path);
  expect(pack).toMatchObject({ name: "@reelay/plugin-sdk", version: SDK_VERSION });
  expect(paths).toEqual(expect.arrayContaining(["package.json", "README.md", "dist/index.js", "dist/index.d.ts", "dist/contract/index.js", "dist/contract/index.d.ts", "dist/testing.js", "src/index.ts"]));
  expect(paths.filter((p) => p.startsWith("test/") || p.includes(".test."))).toEqual([]);
}, 120_000);
