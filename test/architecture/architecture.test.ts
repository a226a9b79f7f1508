/**
 * docs/architecture.md stays true: every file or folder it names exists, and the layers it
 * describes hold — no file of src/ imports (even a type) from a layer above its own.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { blocksCheckedBy } from "../readme/doc-blocks.ts";

const ROOT = resolve(import.meta.dir, "../..");
const DOC = readFileSync(join(ROOT, "docs/architecture.md"), "utf8");

/** Code spans that name repository paths: a root folder or a file with an extension, no spaces. */
function pathsNamed(markdown: string): string[] {
  const spans = [...markdown.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
  return spans.filter((s) => !/\s/.test(s) && (/^(src|packages|plugins|test|docs|bench|drizzle|console|examples|scripts|deploy)\//.test(s) || /\.(ts|md|sql|json|sh)$/.test(s)));
}

describe("docs/architecture.md", () => {
  const paths = pathsNamed(DOC);

  test("names files from the repository root, and every one exists", () => {
    expect(paths.length).toBeGreaterThan(40);
    const relativeNames = paths.filter((p) => !/^(src|packages|plugins|test|docs|bench|drizzle|console|examples|scripts|deploy)\//.test(p));
    expect(relativeNames).toEqual([]);
    expect(paths.filter((p) => !existsSync(join(ROOT, p)))).toEqual([]);
  });

  test("is linked from the README", () => {
    expect(readFileSync(join(ROOT, "README.md"), "utf8").includes("](docs/architecture.md)")).toBe(true);
  });

  test("its layout block names only paths that exist", () => {
    const [layout] = blocksCheckedBy("test/architecture/architecture.test.ts");
    // each line: one or more paths, then what it is; `<feature>` stands for any folder
    const leadingPaths = (line: string) => { const words = line.split(/\s+/); return words.slice(0, Math.max(1, words.findIndex((w) => !/^[\w<>.-]+(\/[\w<>.-]+)*(\/|\.ts)$/.test(w)))); };
    const named = layout!.code.split("\n").flatMap(leadingPaths).map((p) => p.replace(/<[a-z]+>\/$/, ""));
    expect(named.length).toBeGreaterThan(20);
    expect(named.filter((p) => !existsSync(join(ROOT, p)))).toEqual([]);
  });
});

/**
 * The layers of src/, lowest first (the table in docs/architecture.md). A file may import from its
 * own layer and the ones below. One exception, stated in the doc: route modules name the parts they
 * need with `import type { AppDeps } from "src/deps.ts"` (types only, nothing runs).
 */
const LAYERS: Array<{ name: string; parts: string[] }> = [
  { name: "foundation", parts: ["config.ts", "config", "models-file.ts", "errors.ts", "ids.ts", "logger.ts", "background.ts", "lifecycle.ts", "db", "net", "media", "text", "plugin-sdk"] },
  { name: "services", parts: ["billing", "accounts", "auth", "rate-limit", "registry", "plugin-host", "ops", "usage", "blob-store", "operators", "audit"] },
  { name: "HTTP", parts: ["http"] },
  { name: "route modules", parts: ["modules"] },
  { name: "composition", parts: ["main.ts", "boot.ts", "app.ts", "listen.ts", "deps.ts", "cli"] },
];
const layerOf = (part: string) => LAYERS.findIndex((l) => l.parts.includes(part));

/** the first path segment under src/ ("billing", "app.ts"); null outside src/ */
function partOf(file: string): string | null {
  const rel = relative(join(ROOT, "src"), file);
  return rel.startsWith("..") ? null : rel.split("/")[0]!;
}

describe("layers", () => {
  const files = [...new Bun.Glob("src/**/*.{ts,tsx}").scanSync(ROOT)]
    .filter((f) => !/\.test\.ts$|\.test-helper\.ts$|\.d\.ts$/.test(f))
    // the plugin boundary has its own rule (plugins and the SDK import nothing of the core): the plugin contract tests
    .filter((f) => !f.startsWith("src/plugin-sdk/"));

  test("every part of src/ has a layer", () => {
    const parts = new Set(files.map((f) => partOf(join(ROOT, f))!));
    expect([...parts].filter((p) => layerOf(p) < 0)).toEqual([]);
  });

  test("no file imports from a layer above its own", () => {
    const upward: string[] = [];
    for (const file of files) {
      const source = readFileSync(join(ROOT, file), "utf8");
      const from = layerOf(partOf(join(ROOT, file))!);
      const statements = [
        ...source.matchAll(/^\s*(import|export)\s+(type\s+)?(?:[^;]*?\s+from\s+)?["'](\.[^"']+)["']/gm),
        ...source.matchAll(/\b(import)\((\s*)["'](\.[^"']+)["']\s*\)/g), // dynamic: never a type
      ];
      for (const m of statements) {
        const target = partOf(resolve(dirname(join(ROOT, file)), m[3]!));
        if (target === null) continue; // plugins, migrations, node_modules assets
        const to = layerOf(target);
        const typeOnlyDeps = target === "deps.ts" && m[2]?.trim() === "type" && LAYERS[from]!.name === "route modules";
        if (to > from && !typeOnlyDeps) upward.push(`${file} (${LAYERS[from]!.name}) imports ${m[3]} (${LAYERS[to]?.name ?? "no layer"})`);
      }
    }
    expect(upward).toEqual([]);
  });
});

/**
 * What runs before the socket opens (src/main.ts's static imports, transitively) stays small:
 * none of the app's libraries. One of them there (Elysia through the error handler) delayed the
 * first /healthz by ~40 ms; bench/foundation.ts measures the start.
 */
describe("before listening", () => {
  test("src/main.ts statically imports none of the app's libraries", () => {
    const transpiler = new Bun.Transpiler({ loader: "ts" });
    const seen = new Set<string>();
    const packages = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      // scanImports lists static imports only; `import type` is erased, dynamic import() is not followed
      for (const imp of transpiler.scanImports(readFileSync(file, "utf8").replace(/^#!.*/, ""))) {
        if (imp.kind !== "import-statement") continue;
        if (imp.path.startsWith(".")) visit(resolve(dirname(file), imp.path));
        else packages.add(imp.path.split("/").slice(0, imp.path.startsWith("@") ? 2 : 1).join("/"));
      }
    };
    visit(join(ROOT, "src/main.ts"));
    expect(seen.size).toBeGreaterThan(4);
    expect([...packages].filter((p) => !p.startsWith("node:") && p !== "bun").sort()).toEqual(["ipaddr.js", "pino"]);
  });
});
