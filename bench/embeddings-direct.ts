/**
 * In-process USE-lite throughput on the wasm backend, no HTTP and no micro-batching: each batch is
 * one `embed` call. Prints sentences/s and per-batch p50/p99 at batch sizes 1, 8, 32, 64, plus the
 * process's peak RSS.
 *
 *   bun bench/embeddings-direct.ts [secondsPerSize=4]
 */
import { loadavg } from "node:os";
import { loadUseLiteEncoder } from "../plugins/local-embeddings/use-lite-encoder.ts";

const secondsPerSize = Number(process.argv[2] ?? 4);
const BATCH_SIZES = [1, 8, 32, 64];

const subjects = ["The committee", "My neighbour", "A small startup", "The old library", "Our support team", "The river", "This new phone", "The orchestra"];
const verbs = ["announced", "repaired", "questioned", "celebrated", "ignored", "described", "postponed", "improved"];
const objects = ["the quarterly budget", "a broken bicycle", "the long-awaited update", "the winter festival", "an unusual request", "the rainy weather", "its battery life", "the evening concert"];
const sentence = (i: number) => `${subjects[i % 8]} ${verbs[(i >> 3) % 8]} ${objects[(i >> 6) % 8]} on day ${i}.`;

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

const loadStart = performance.now();
const encoder = await loadUseLiteEncoder({ backend: "wasm" });
const loadMs = performance.now() - loadStart;
const rssAfterLoadMb = process.memoryUsage().rss / 2 ** 20;
await encoder.embed([sentence(0)]); // first pass compiles kernels; keep it out of the numbers

const sample = Array.from({ length: 512 }, (_, i) => sentence(i));
const tokensPerSentence = encoder.countTokens(sample).reduce((a, b) => a + b, 0) / sample.length;
const loadBefore = loadavg()[0]!;

const rows: string[][] = [];
let next = 0;
for (const size of BATCH_SIZES) {
  for (let i = 0; i < 3; i++) await encoder.embed(Array.from({ length: size }, () => sentence(next++)));
  const latencies: number[] = [];
  const started = performance.now();
  while (performance.now() - started < secondsPerSize * 1000 || latencies.length < 10) {
    const batch = Array.from({ length: size }, () => sentence(next++));
    const t0 = performance.now();
    await encoder.embed(batch);
    latencies.push(performance.now() - t0);
  }
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  rows.push([
    String(size),
    String(latencies.length),
    ((latencies.length * size) / elapsed).toFixed(0),
    percentile(latencies, 50).toFixed(1),
    percentile(latencies, 99).toFixed(1),
  ]);
}

const header = ["batch", "batches", "sentences/s", "p50 ms/batch", "p99 ms/batch"];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (cells: string[]) => cells.map((c, i) => c.padStart(widths[i]!)).join("  ");
console.log(
  `USE-lite in process, backend ${encoder.backend}, model load ${loadMs.toFixed(0)} ms, ` +
    `${tokensPerSentence.toFixed(1)} tokens/sentence, ~${secondsPerSize}s per size, ` +
    `load average ${loadBefore.toFixed(2)} → ${loadavg()[0]!.toFixed(2)} (machine has 2 cores)`,
);
console.log(line(header));
for (const r of rows) console.log(line(r));
console.log(`RSS after model load ${rssAfterLoadMb.toFixed(0)} MB, peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
encoder.dispose();
