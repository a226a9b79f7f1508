/**
 * The Node.js version the README asks for is the truth: package.json's `engines` says the same, the
 * Node this suite runs beside (CI's) satisfies it, and the packages the README names as asking for
 * a newer Node (npm's EBADENGINE warnings, which do not matter: they run under Bun) are exactly the
 * installed ones whose `engines` that version does not satisfy.
 */
import { expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./doc-blocks.ts";

const readme = readFileSync(join(ROOT, "README.md"), "utf8");
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { engines: { node: string } };
const stated = /\*\*Node\.js (\d+\.\d+) or newer\*\*/.exec(readme)?.[1];

test("the README's Node version is package.json's engines, and the Node here satisfies it", () => {
  expect(stated).toBeString();
  expect(pkg.engines.node).toBe(`>=${stated}`);
  const node = Bun.spawnSync(["node", "--version"]).stdout.toString().trim().replace(/^v/, "");
  expect({ node, satisfies: Bun.semver.satisfies(node, pkg.engines.node) }).toEqual({ node, satisfies: true });
});

test("the packages the README says npm warns about (EBADENGINE) are those that ask for more than that version", () => {
  const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as { packages: Record<string, { engines?: { node?: string } }> };
  const asking = new Set<string>();
  for (const [path, p] of Object.entries(lock.packages)) {
    const range = p.engines?.node;
    if (!path || !range || !existsSync(join(ROOT, path, "package.json"))) continue; // not installed on this platform
    if (!Bun.semver.satisfies(`${stated}.0`, range)) asking.add(path.replace(/^.*node_modules\//, ""));
  }
  const paragraph = readme.split("\n\n").find((p) => p.includes("`EBADENGINE`"))!;
  const named = [...paragraph.slice(0, paragraph.indexOf("which ask for")).matchAll(/`([@\w/.-]+)`/g)].map((m) => m[1]!).filter((n) => n !== "EBADENGINE");
  expect(named.sort()).toEqual([...asking].sort());
});
