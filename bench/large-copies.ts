/**
 * What a large allocation costs the thread that serves requests (issue 34: the soak's latency crept
 * with the video rate) — one command:
 *
 *   bun bench/large-copies.ts [--runs 200]
 *
 * 1. `slice()` of one 480x832 RGBA frame (1.6 MB), `runs` times, with 0, 200,000 and 600,000 small
 *    objects live on the heap: a new buffer of that size can start a garbage collection, whose cost
 *    grows with what is live. The encoder pool (src/plugin-host/mp4-encoder-pool.ts) used to make one
 *    such copy per frame; it now copies into buffers the encoder worker gives back.
 * 2. 20 inserts of one bytea of 100 kB, 1 MB and 3 MB through the project's patched postgres.js on
 *    one connection (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test; a table of its own,
 *    dropped after), with the longest event-loop stall seen by a 1 ms timer meanwhile.
 * Prints a table per part; medians.
 */
import postgres from "postgres";
import { arg } from "./lib/binaries.ts";
import { median, table } from "./lib/wrk.ts";

const RUNS = Number(arg("runs", "200"));
const FRAME = 480 * 832 * 4;

async function sliceCost(liveObjects: number) {
  // a child process per heap size: each starts from a heap of exactly what it keeps
  const code = `
    const keep = []; for (let i = 0; i < ${liveObjects}; i++) keep.push({ a: i, b: "x" + i, c: [i, i + 1] });
    const frame = new Uint8Array(${FRAME}).fill(3); const ts = []; let sink = 0;
    for (let i = 0; i < ${RUNS}; i++) { const t0 = performance.now(); const c = frame.slice(); sink += c[5]; ts.push(performance.now() - t0); }
    ts.sort((a, b) => a - b);
    console.log(JSON.stringify({ median: ts[ts.length >> 1], p99: ts[Math.floor(ts.length * 0.99)], max: ts.at(-1), total: ts.reduce((a, b) => a + b, 0), keep: keep.length, sink }));`;
  const p = Bun.spawnSync([process.execPath, "-e", code]);
  return JSON.parse(p.stdout.toString()) as { median: number; p99: number; max: number; total: number };
}

console.log(`1. slice() of a ${FRAME} B frame, ${RUNS} times`);
const rows: Array<Array<string | number>> = [];
for (const live of [0, 200_000, 600_000]) {
  const r = await sliceCost(live);
  rows.push([live, r.median.toFixed(2), r.p99.toFixed(1), r.max.toFixed(1), r.total.toFixed(0)]);
}
console.log(table(["objects live", "median ms", "p99 ms", "max ms", "total ms"], rows));

const sql = postgres(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test", { max: 1, onnotice: () => {} });
const t = `bench_large_copies_${process.pid}`;
await sql`CREATE TABLE ${sql(t)} (k text PRIMARY KEY, data bytea)`;
try {
  const puts: Array<Array<string | number>> = [];
  for (const size of [100_000, 1_000_000, 3_000_000]) {
    const buf = Buffer.alloc(size);
    for (let i = 0; i < size; i++) buf[i] = (i * 2654435761) >>> 24;
    let stall = 0, last = performance.now();
    const timer = setInterval(() => { const now = performance.now(); stall = Math.max(stall, now - last - 1); last = now; }, 1);
    const times: number[] = [];
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      await sql`INSERT INTO ${sql(t)} (k, data) VALUES (${`${size}-${i}`}, ${buf})`;
      times.push(performance.now() - t0);
    }
    clearInterval(timer);
    puts.push([size, median(times).toFixed(1), Math.max(...times).toFixed(1), stall.toFixed(1)]);
  }
  console.log(`\n2. 20 inserts of one bytea on one connection\n` + table(["bytes", "median ms", "max ms", "longest loop stall ms"], puts));
} finally {
  await sql`DROP TABLE ${sql(t)}`;
  await sql.end();
}
