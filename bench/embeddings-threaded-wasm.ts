/**
 * The tfjs wasm backend's threaded-SIMD build (setThreadsCount) against the SIMD build reelay uses,
 * USE-lite in process (issue 15 item 4) — one command:
 *
 *   bun bench/embeddings-threaded-wasm.ts [--rounds 5]
 *
 * As shipped the threaded build does not load under Bun: TF.js turns it off under Node-compatible
 * runtimes (WASM_HAS_MULTITHREAD_SUPPORT is false when IS_NODE, tfjs#3830), and forced on, its
 * Emscripten glue starts each pthread with `new Worker("blob:…")`, which Bun's worker_threads
 * refuse ("must be an absolute path or a relative path starting with './'"). Measuring it takes
 * two shims (below, never in reelay): blobs written to files, and the bundle-private names the
 * pthread script refers to (require$$0…4, commonjsGlobal) defined in the workers. TF.js then caps
 * its pool at logical cores / 2 (tfjs-backend-wasm backend.cc: it assumes two hyperthreads per
 * core), so on a 2-core machine setThreadsCount(2) gives 1 thread; the 2-thread row fakes 4 CPUs.
 * Each variant runs in its own process, the variants alternate, medians of `rounds`.
 */
import { loadavg } from "node:os";
import { median, table } from "./lib/wrk.ts";

const child = process.argv.indexOf("--child");
if (child === -1) {
  const i = process.argv.indexOf("--rounds");
  const rounds = i === -1 ? 5 : Number(process.argv[i + 1]);
  // `copies` processes at once, their rates summed: two SIMD copies is what reelay's two workers do
  const variants = [
    { name: "SIMD build (what reelay loads), one copy", args: ["0", "0"], copies: 1 },
    { name: "SIMD build, two copies at once (reelay's 2 workers)", args: ["0", "0"], copies: 2 },
    { name: "threaded-SIMD, setThreadsCount(2) → 1 thread (TF.js's cap on 2 cores)", args: ["2", "0"], copies: 1 },
    { name: "threaded-SIMD, 2 threads (4 CPUs faked)", args: ["2", "4"], copies: 1 },
  ];
  const results = variants.map(() => [] as Array<Record<string, number>>);
  const load0 = loadavg()[0]!;
  for (let r = 0; r < rounds; r++) {
    for (const [v, variant] of variants.entries()) {
      const runs = await Promise.all(Array.from({ length: variant.copies }, async () => {
        const p = Bun.spawn([process.execPath, import.meta.path, "--child", ...variant.args], { stdout: "pipe", stderr: "inherit" });
        return JSON.parse((await new Response(p.stdout).text()).trim().split("\n").at(-1)!) as Record<string, number>;
      }));
      results[v]!.push({ threads: runs[0]!.threads! * variant.copies, loadMs: runs[0]!.loadMs!, rssMB: runs.reduce((n, x) => n + x.rssMB!, 0), batch32: runs.reduce((n, x) => n + x.batch32!, 0), batch1: runs.reduce((n, x) => n + x.batch1!, 0) });
    }
  }
  const m = (v: number, k: string) => median(results[v]!.map((x) => x[k]!));
  console.log(`\nUSE-lite in process on the tfjs wasm backend (${rounds} rounds, medians; load average ${load0.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}, 2 cores)\n`);
  console.log(table(["build", "threads", "sentences/s, batch 32", "sentences/s, batch 1", "model load ms", "RSS after load MB (all copies)", "runs, batch 32"], variants.map((variant, v) => [
    variant.name, m(v, "threads"), m(v, "batch32").toFixed(1), m(v, "batch1").toFixed(1), m(v, "loadMs").toFixed(0), m(v, "rssMB").toFixed(0), results[v]!.map((x) => x.batch32!.toFixed(0)).join(", "),
  ])));
  process.exit(0);
}
const os = await import("node:os");
const { readdirSync, rmSync, writeFileSync } = await import("node:fs");
const { join } = await import("node:path");
const { tmpdir } = os;
const blobFiles: string[] = [];
const threads = Number(process.argv[child + 1]);
const fakeCpus = Number(process.argv[child + 2]);
if (fakeCpus) { const real = os.cpus(); (os.default as { cpus: typeof os.cpus }).cpus = () => Array.from({ length: fakeCpus }, (_, i) => real[i % real.length]!); }
// Bun's worker_threads refuse blob: URLs, and the pthread main script (Function.toString of the
// bundled factory) refers to the bundle's module-scope aliases: write blobs to files, define the aliases
const shim = `Object.assign(globalThis, { require$$0: require("fs"), require$$1: require("path"), require$$3: require("perf_hooks"), require$$4: require("os"), commonjsGlobal: globalThis }); (() => { const fs = require("fs"); let n = 0; URL.createObjectURL = (b) => { const p = require("os").tmpdir() + "/tfjs-blob-" + process.pid + "-" + (n++) + ".js"; fs.writeFileSync(p, Bun.peek(b.text())); return p; }; URL.revokeObjectURL = () => {}; })();`;
URL.createObjectURL = (b: Blob) => { const text = Bun.peek(b.text()) as string; const p = join(tmpdir(), `tfjs-main-${process.pid}-${blobFiles.length}.js`); blobFiles.push(p); writeFileSync(p, text.includes("nodeWorkerThreads") ? shim + text : text); return p as `blob:${string}`; };
const tf = await import("@tensorflow/tfjs-core");
const wasm = await import("@tensorflow/tfjs-backend-wasm");
if (threads > 0) { tf.env().set("WASM_HAS_MULTITHREAD_SUPPORT", true); wasm.setThreadsCount(threads); }
const { loadUseLiteEncoder } = await import("../plugins/local-embeddings/use-lite-encoder.ts");
const t0 = performance.now();
const enc = await loadUseLiteEncoder({ backend: "wasm" });
const loadMs = performance.now() - t0;
const subjects = ["The committee", "My neighbour", "A small startup", "The old library", "Our support team", "The river", "This new phone", "The orchestra"];
const verbs = ["announced", "repaired", "questioned", "celebrated", "ignored", "described", "postponed", "improved"];
const objects = ["the quarterly budget", "a broken bicycle", "the long-awaited update", "the winter festival", "an unusual request", "the rainy weather", "its battery life", "the evening concert"];
const sentence = (i: number) => `${subjects[i % 8]} ${verbs[(i >> 3) % 8]} ${objects[(i >> 6) % 8]} on day ${i}.`;
let next = 0;
for (let i = 0; i < 3; i++) await enc.embed(Array.from({ length: 32 }, () => sentence(next++)));
const out: Record<string, number> = { threads: wasm.getThreadsCount(), loadMs, rssMB: process.memoryUsage().rss / 2 ** 20 };
for (const size of [32, 1]) {
  let n = 0;
  const s0 = performance.now();
  while (performance.now() - s0 < 6000) { await enc.embed(Array.from({ length: size }, () => sentence(next++))); n += size; }
  out[`batch${size}`] = n / ((performance.now() - s0) / 1000);
}
console.log(JSON.stringify(out));
for (const f of [...blobFiles, ...readdirSync(tmpdir()).filter((f) => f.startsWith(`tfjs-blob-${process.pid}-`)).map((f) => join(tmpdir(), f))]) rmSync(f, { force: true });
process.exit(0);
