/**
 * Every benchmark, one after the other, then one table of how each went:
 *
 *   bun bench/run-all.ts              all of them (about an hour on a 2-core machine: chat-proxy,
 *                                     foundation and console are the long ones)
 *   bun bench/run-all.ts tokens billing   only these (names are the file names without .ts)
 *   bun bench/run-all.ts --list       the names
 *
 * Each benchmark runs as its own process with its default arguments (`bun bench/<name>.ts`), one at
 * a time: they measure the machine, so two at once would measure each other. Their own tables are
 * printed as they come; the last table says which finished, how long each took and where each one's
 * output went (a file per benchmark under $TMPDIR), so a long run can be read afterwards. Exits 1
 * when any benchmark failed.
 */
import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";

const BENCH_DIR = import.meta.dir;
const SELF = basename(import.meta.path);

const all = readdirSync(BENCH_DIR)
  .filter((f) => f.endsWith(".ts") && f !== SELF)
  .map((f) => f.slice(0, -3))
  .sort();

const args = process.argv.slice(2);
if (args.includes("--list")) {
  console.log(all.join("\n"));
  process.exit(0);
}
const unknown = args.filter((a) => !all.includes(a));
if (unknown.length) {
  console.error(`no benchmark named ${unknown.join(", ")}; there are: ${all.join(", ")}`);
  process.exit(2);
}
const chosen = args.length ? args : all;
const outDir = mkdtempSync(join(tmpdir(), "reelay-bench-"));

interface Outcome {
  name: string;
  exitCode: number;
  seconds: number;
  log: string;
}

async function run(name: string): Promise<Outcome> {
  console.log(`\n=== bench/${name}.ts ===`);
  const t0 = performance.now();
  const proc = Bun.spawn(["bun", join(BENCH_DIR, `${name}.ts`)], { stdout: "pipe", stderr: "pipe", env: process.env });
  let text = "";
  const relay = async (stream: ReadableStream<Uint8Array>, to: NodeJS.WriteStream) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      to.write(chunk);
      text += decoder.decode(chunk, { stream: true });
    }
  };
  await Promise.all([relay(proc.stdout, process.stdout), relay(proc.stderr, process.stderr)]);
  const exitCode = await proc.exited;
  const log = join(outDir, `${name}.log`);
  writeFileSync(log, text);
  return { name, exitCode, seconds: (performance.now() - t0) / 1000, log };
}

const outcomes: Outcome[] = [];
for (const name of chosen) outcomes.push(await run(name));

console.log(`\n| benchmark | result | wall time | output |`);
console.log(`|---|---|---:|---|`);
for (const o of outcomes) {
  console.log(`| ${o.name} | ${o.exitCode === 0 ? "ok" : `failed (exit ${o.exitCode})`} | ${o.seconds.toFixed(1)} s | ${o.log} |`);
}
process.exit(outcomes.some((o) => o.exitCode !== 0) ? 1 : 0);
