/**
 * `bun build --compile` through the JS API, which (unlike the CLI) takes bundler plugins:
 *   bun compile.ts [--bytecode] [--format=esm] --outfile dist/reelay <entrypoints…>
 * Same settings as the CLI's --compile (production: minified, NODE_ENV=production), no source map.
 * Entrypoints that are not code (the PGlite seed tarball) are embedded as files, as with the CLI.
 * The @node-llama-cpp/* platform packages stay external: the binary loads its embedded linux-x64
 * build instead (plugins/local-llm/load-llama.ts), and the other platforms' packages are not installed.
 */
import { inlineLlamaCppRelease } from "./plugins/local-llm/bundle-patch.ts";

const entrypoints: string[] = [];
let outfile: string | undefined;
let bytecode = false;
let format: "esm" | "cjs" | undefined;
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  const a = args[i]!;
  if (a === "--outfile") outfile = args[++i];
  else if (a === "--bytecode") bytecode = true;
  else if (a === "--format=esm" || a === "--format=cjs") format = a.slice("--format=".length) as "esm" | "cjs";
  else if (a.startsWith("-")) usage(`unknown flag ${a}`);
  else entrypoints.push(a);
}
if (!outfile || entrypoints.length === 0) usage("an --outfile and at least one entrypoint are needed");

const result = await Bun.build({
  entrypoints,
  compile: { outfile: outfile! },
  bytecode,
  ...(format ? { format } : {}),
  minify: true,
  define: { "process.env.NODE_ENV": JSON.stringify("production") },
  sourcemap: "none",
  external: ["@node-llama-cpp/*"],
  plugins: [inlineLlamaCppRelease],
});
for (const log of result.logs) console.error(log);
if (!result.success) process.exit(1);

function usage(problem: string): never {
  console.error(`compile.ts: ${problem}\nusage: bun compile.ts [--bytecode] [--format=esm|cjs] --outfile <file> <entrypoint>…`);
  process.exit(2);
}
