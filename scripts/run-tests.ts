#!/usr/bin/env bun
/**
 * `npm test`: every test file, in several `bun test` processes at once, then one summary.
 *
 * One `bun test` process runs its files one after another; most of a file's time is spent waiting
 * (servers starting, Postgres, a spawned CLI, a browser), so on the 2-core CI box three processes
 * finish the suite in well under half the time of one. The files wait in one queue, longest first
 * by their measured duration (test/timings.json, written by `--record`: each file's wall time in a
 * process of its own, hooks included; a file without a figure counts DEFAULT_SECONDS), and each of
 * the shards takes the next batch when its last one ends: a long file alone, short ones together up
 * to BATCH_SECONDS. Dealing them out beforehand left one
 * shard ~5 minutes behind the others when the machine was slower than when the timings were
 * taken (CI: 1036 s, 1329 s, 1086 s); taking work as it frees up ends the shards within about one
 * batch of each other. Every file stays whole in one process (a file's tests share its beforeAll),
 * and files never depended on running in one process: each makes its own databases, ports and
 * temp directories.
 *
 *   bun scripts/run-tests.ts                 all files, REELAY_TEST_SHARDS (default 3) at once
 *   bun scripts/run-tests.ts path/ file.ts   only those (directories or files)
 *   bun scripts/run-tests.ts --record        every file in a process of its own, and test/timings.json rewritten from their times
 *
 * Each batch's output is printed whole when it ends (interleaved lines from three processes are
 * unreadable); the last lines are bun's own totals (` N pass`, ` N fail`) summed over the batches,
 * which is what .ci/run reads.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";

const ROOT = join(import.meta.dir, "..");
const TIMINGS = join(ROOT, "test", "timings.json");
const DEFAULT_SECONDS = 10;
const BATCH_SECONDS = 45;
const TIMEOUT_MS = "60000";

const args = process.argv.slice(2);
const record = args.includes("--record");
const only = args.filter((a) => !a.startsWith("--"));
const shardCount = Math.max(1, Number(process.env.REELAY_TEST_SHARDS ?? 3) || 3);

function testFiles(): string[] {
  const glob = new Bun.Glob("**/*.{test,spec}.{ts,tsx}");
  const files: string[] = [];
  for (const f of glob.scanSync({ cwd: ROOT, dot: false })) {
    if (/(^|\/)(node_modules|dist|test-output)\//.test(f)) continue;
    if (only.length && !only.some((o) => f === relative(ROOT, join(ROOT, o)) || f.startsWith(relative(ROOT, join(ROOT, o)).replace(/\/?$/, "/")))) continue;
    files.push(f);
  }
  return files.sort();
}

function readTimings(): Record<string, number> {
  try {
    return JSON.parse(readFileSync(TIMINGS, "utf8"));
  } catch {
    return {};
  }
}

/** The files in batches, longest first: a file of BATCH_SECONDS or more alone, shorter ones together up to that. */
function batches(files: string[], timings: Record<string, number>): string[][] {
  const weight = (f: string) => timings[f] ?? DEFAULT_SECONDS;
  const out: Array<{ files: string[]; seconds: number }> = [];
  let open: { files: string[]; seconds: number } | null = null;
  for (const f of [...files].sort((a, b) => weight(b) - weight(a))) {
    if (!open || open.seconds + weight(f) > BATCH_SECONDS) out.push((open = { files: [], seconds: 0 }));
    open.files.push(f);
    open.seconds += weight(f);
  }
  return out.map((b) => b.files);
}

interface BatchResult {
  index: number;
  code: number;
  output: string;
  pass: number;
  fail: number;
  expects: number;
  tests: number;
  seconds: number;
  files: string[];
}

async function runBatch(index: number, files: string[]): Promise<BatchResult> {
  const started = performance.now();
  const proc = Bun.spawn(["bun", "test", "--timeout", TIMEOUT_MS, ...files.map((f) => "./" + f)], {
    cwd: ROOT, stdout: "pipe", stderr: "pipe", env: process.env,
  });
  // bun test writes results to stderr; keep both, in the order each stream produced them
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  const code = await proc.exited;
  const output = out + err;
  // bun's totals for the batch are its last such lines (a test may print something that looks like them earlier)
  const count = (re: RegExp) => Number([...output.matchAll(new RegExp(re.source, "gm"))].at(-1)?.[1] ?? 0);
  return {
    index, code, output,
    pass: count(/^\s*(\d+) pass$/m),
    fail: count(/^\s*(\d+) fail$/m),
    expects: count(/^\s*(\d+) expect\(\) calls$/m),
    tests: count(/^Ran (\d+) tests?/m),
    seconds: (performance.now() - started) / 1000,
    files,
  };
}

/** Each failed test's lines as bun printed them (its error and the test's own output before its `(fail)` line), under its file. */
function failureBlocks(output: string, maxLines = 80): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  let file = "";
  let since: string[] = [];
  for (const line of output.split("\n")) {
    const header = /^(\S+\.(?:test|spec)\.tsx?):$/.exec(line);
    if (header) (file = header[1]!), (since = []);
    else if (line.startsWith("(pass)") || line.startsWith("(skip)") || line.startsWith("(todo)")) since = [];
    else if (line.startsWith("(fail)")) {
      if (since.length) out.push([file, [...(since.length > maxLines ? ["…", ...since.slice(-maxLines)] : since), line].join("\n")]);
      since = [];
    } else if (/^\d+ tests? failed:$/.test(line.trim())) (file = ""), (since = []); // bun's own summary repeats the (fail) lines
    else since.push(line);
  }
  return out;
}

const files = testFiles();
if (files.length === 0) {
  console.error(`no test files match ${only.join(" ")}`);
  process.exit(1);
}
const timings = readTimings();
// --record: one file per batch, so a batch's wall time is its file's (a soak or a release build in beforeAll included)
const queue = record ? batches(files, timings).flat().map((f) => [f]) : batches(files, timings);
const total = Math.round(files.reduce((n, f) => n + (timings[f] ?? DEFAULT_SECONDS), 0));
const workers = Math.min(shardCount, queue.length);
console.log(`${files.length} test files (~${total} s measured) in ${queue.length} batches, ${workers} shard(s) at once`);

interface Shard { index: number; results: BatchResult[]; seconds: number }
const results: BatchResult[] = [];
let batchNo = 0;
const shards: Shard[] = await Promise.all(Array.from({ length: workers }, async (_, index) => {
  const shard: Shard = { index, results: [], seconds: 0 };
  const started = performance.now();
  for (let batch = queue.shift(); batch; batch = queue.shift()) {
    const r = await runBatch(++batchNo, batch);
    shard.results.push(r);
    results.push(r);
    console.log(`\n==== shard ${index + 1}, batch ${r.index} (${batch.length} file${batch.length > 1 ? "s" : ""}): ${r.pass} pass, ${r.fail} fail, exit ${r.code}, ${r.seconds.toFixed(0)} s ====`);
    console.log(r.output.trimEnd());
  }
  shard.seconds = (performance.now() - started) / 1000;
  return shard;
}));

if (record && !only.length) {
  const measured = Object.fromEntries(results.map((r) => [r.files[0]!, Math.round(r.seconds * 10) / 10]));
  const sorted = Object.fromEntries(Object.entries(measured).sort(([a], [b]) => a.localeCompare(b)));
  writeFileSync(TIMINGS, JSON.stringify(sorted, null, 1) + "\n");
  console.log(`\ntimings of ${Object.keys(sorted).length} files written to ${relative(ROOT, TIMINGS)}`);
}

const sum = (k: "pass" | "fail" | "expects" | "tests") => results.reduce((n, r) => n + r[k], 0);
const failed = [...new Set(results.flatMap((r) => r.output.split("\n").filter((l) => l.startsWith("(fail)"))))];
// a shard that died without bun's totals (a crash, a preload refusing to start) is a failure too
const broken = results.filter((r) => r.code !== 0 && r.fail === 0);
console.log("\n==== all shards ====");
for (const sh of shards) {
  const n = (k: "pass" | "fail") => sh.results.reduce((a, r) => a + r[k], 0);
  console.log(`shard ${sh.index + 1}: ${sh.results.length} batches, ${n("pass")} pass, ${n("fail")} fail, ${sh.seconds.toFixed(0)} s`);
}
if (failed.length) console.log(`\n${failed.length} failed:\n${failed.join("\n")}`);
// what each failure printed, again at the end: CI keeps only the tail of a run's output
for (const [file, block] of failureBlocks(results.map((r) => r.output).join("\n"))) console.log(`\n---- ${file}\n${block}`);
for (const r of broken) console.log(`\nbatch ${r.index} exited ${r.code} without a failing test: see its output above`);
console.log(`\n ${sum("pass")} pass\n ${sum("fail") + broken.length} fail\n ${sum("expects")} expect() calls\nRan ${sum("tests")} tests across ${files.length} files.`);
process.exit(failed.length || broken.length || results.some((r) => r.code !== 0) ? 1 : 0);
