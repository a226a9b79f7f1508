/**
 * `bun bench/video-jobs.ts` (about 1–2 min; needs Postgres at DATABASE_URL or 127.0.0.1:5432/test).
 * The server runs as a child process (`bun src/main.ts serve`), so RSS and CPU are the server's own,
 * read from /proc. Measures:
 *   1. submit throughput and latency (10,000 submits of a 64x48 PNG, 32 in flight; the model keeps them queued)
 *   2. server RSS with those 10,000 jobs queued vs with none
 *   3. 1,000 jobs on a remote-like scripted plugin taking 2 s each (timer, no CPU), maxConcurrency 100:
 *      wall time vs the ideal 20 s, and the server's CPU time for it
 *   4. preview render of 5 s at 480x832 (bench/preview-render.ts)
 *   5. /content of a 50 MB result kept in the S3 blob store (s3rver) while 20 clients download it
 *      whole at once: server RSS growth (target ≤ 10 MB: streamed, never buffered whole)
 * BENCH_ONLY=s3 runs section 5 alone.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { createTestDatabase, dropDatabase } from "../test/support/harness.ts";
import { pngBase64, scriptedEnv } from "../test/videos/support.ts";
import { newClientOn, spawnServer, type ChildServer } from "../test/support/child-server.ts";
import { startS3Emulator } from "../test/support/s3-emulator.ts";

const SUBMITS = Number(process.env.BENCH_SUBMITS ?? 10_000);
const JOBS = Number(process.env.BENCH_JOBS ?? 1_000);
const IN_FLIGHT = 32;
const IMG = pngBase64(64, 48);
const ONLY = process.env.BENCH_ONLY ?? null;

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
/** user+system CPU seconds of a process (clock ticks of 10 ms) */
const cpuSec = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
};
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;

async function withServer<T>(models: Parameters<typeof scriptedEnv>[0], run: (s: ChildServer, db: string) => Promise<T>, env: Record<string, string> = {}): Promise<T> {
  const databaseUrl = await createTestDatabase();
  const s = await spawnServer({ DATABASE_URL: databaseUrl, REELAY_LOG_LEVEL: "error", REELAY_SCHEDULER_POLL_MS: "100", REELAY_RATE_RPM: "100000000", ...scriptedEnv(models), ...env });
  try {
    return await run(s, databaseUrl);
  } finally {
    await s.stop();
    await dropDatabase(databaseUrl);
  }
}

async function submitMany(s: ChildServer, keys: string | string[], model: string, n: number, inFlight: number) {
  const keyList = Array.isArray(keys) ? keys : [keys];
  const latencies: number[] = [];
  let next = 0, failed = 0;
  const body = JSON.stringify({ model, prompt: "bench", image: IMG, seconds: 1, size: "480x832" });
  const t0 = performance.now();
  await Promise.all(Array.from({ length: inFlight }, async (_, worker) => {
    const key = keyList[worker % keyList.length]!;
    while (next < n) {
      next++;
      const t = performance.now();
      const res = await fetch(`${s.url}/v1/videos/generations`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body });
      await res.arrayBuffer();
      if (res.status !== 202) failed++;
      latencies.push(performance.now() - t);
    }
  }));
  return { seconds: (performance.now() - t0) / 1000, latencies, failed };
}

const rows: Array<[string, string]> = [];
const log = (m: string) => console.error(`[bench] ${m}`);

// 1 + 2: submits, RSS idle vs 10,000 queued
if (!ONLY) await withServer([{ id: "parked", options: { durationMs: 3_600_000, maxConcurrency: 1 } }], async (s) => {
  const c = await newClientOn(s, 1e13, { concurrent_video_jobs: 1_000_000 });
  const many = await Promise.all(Array.from({ length: 8 }, () => newClientOn(s, 1e13, { concurrent_video_jobs: 1_000_000 })));
  log("warm-up");
  await submitMany(s, c.key, "parked", 200, 8); // warm-up (JIT, connection pool)
  await Bun.sleep(500);
  const rssIdle = rssMb(s.pid);
  log(`${SUBMITS} submits`);
  const r = await submitMany(s, many.map((m) => m.key), "parked", SUBMITS, IN_FLIGHT);
  Bun.gc(true);
  await Bun.sleep(1000);
  const rssQueued = rssMb(s.pid);
  log("1,000 submits on one key");
  const one = await submitMany(s, c.key, "parked", 1_000, IN_FLIGHT);
  rows.push([`submit: ${SUBMITS} submits over 8 keys, ${IN_FLIGHT} in flight`, `${(SUBMITS / r.seconds).toFixed(0)} req/s, p50 ${pct(r.latencies, 50).toFixed(1)} ms, p99 ${pct(r.latencies, 99).toFixed(1)} ms${r.failed ? ` (${r.failed} not 202!)` : ""}`]);
  rows.push([`submit: 1000 submits on ONE key, ${IN_FLIGHT} in flight`, `${(1000 / one.seconds).toFixed(0)} req/s, p50 ${pct(one.latencies, 50).toFixed(1)} ms, p99 ${pct(one.latencies, 99).toFixed(1)} ms${one.failed ? ` (${one.failed} not 202!)` : ""}`]);
  rows.push([`server RSS: 200 jobs queued → ${SUBMITS + 200} queued`, `${rssIdle.toFixed(0)} MB → ${rssQueued.toFixed(0)} MB`]);
});

// 3: 1,000 two-second jobs with 100 in flight
if (!ONLY) await withServer([{ id: "remote", options: { durationMs: 2_000, pollIntervalMs: 200, maxConcurrency: 100 } }], async (s, databaseUrl) => {
  const c = await newClientOn(s, 1e13, { concurrent_video_jobs: 1_000_000 });
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    const cpu0 = cpuSec(s.pid);
    const t0 = performance.now();
    const sub = await submitMany(s, c.key, "remote", JOBS, IN_FLIGHT);
    const cpuAfterSubmit = cpuSec(s.pid);
    for (;;) {
      const [{ n }] = await sql`SELECT count(*)::int AS n FROM video_jobs WHERE status = 'completed'`;
      if (n >= JOBS) break;
      await Bun.sleep(100);
    }
    const wall = (performance.now() - t0) / 1000;
    const cpuTotal = cpuSec(s.pid) - cpu0;
    const ideal = (JOBS / 100) * 2;
    rows.push([`${JOBS} jobs × 2 s, maxConcurrency 100: wall time (ideal ${ideal} s)`, `${wall.toFixed(1)} s (${((wall / ideal - 1) * 100).toFixed(0)}% over; submits took ${sub.seconds.toFixed(1)} s)`]);
    rows.push(["  server CPU for it (all / scheduling only, after submits)", `${cpuTotal.toFixed(1)} s / ${(cpuTotal - (cpuAfterSubmit - cpu0)).toFixed(1)} s`]);
  } finally {
    await sql.end();
  }
});

// 5: a 50 MB result from the S3 store to 20 clients at once
const RESULT_MB = 50;
const DOWNLOADERS = 20;
const s3 = await startS3Emulator();
try {
  await withServer([{ id: "big", options: { durationMs: 0, mp4Bytes: RESULT_MB * 1024 * 1024 } }], async (s) => {
    const c = await newClientOn(s, 1e13, { concurrent_video_jobs: 100 });
    const auth = { authorization: `Bearer ${c.key}` };
    const sub = (await (await fetch(`${s.url}/v1/videos/generations`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ model: "big", prompt: "bench", image: IMG, seconds: 1 }) })).json()) as { id: string };
    for (;;) {
      const st = (await (await fetch(`${s.url}/v1/videos/${sub.id}`, { headers: auth })).json()) as { status: string };
      if (st.status === "completed") break;
      if (st.status === "failed") throw new Error("the 50 MB job failed");
      await Bun.sleep(200);
    }
    // one download to warm up (connections, JIT), then settle
    await (await fetch(`${s.url}/v1/videos/${sub.id}/content`, { headers: auth })).arrayBuffer();
    await Bun.sleep(2_000);
    const before = rssMb(s.pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(s.pid))), 20);
    const t0 = performance.now();
    const got = await Promise.all(Array.from({ length: DOWNLOADERS }, async () => {
      const res = await fetch(`${s.url}/v1/videos/${sub.id}/content`, { headers: auth });
      let n = 0;
      for await (const chunk of res.body!) n += chunk.byteLength;
      return n;
    }));
    const seconds = (performance.now() - t0) / 1000;
    clearInterval(sampler);
    const ok = got.every((n) => n === RESULT_MB * 1024 * 1024);
    rows.push([`/content of a ${RESULT_MB} MB result from S3 (s3rver), ${DOWNLOADERS} clients at once`, `${((RESULT_MB * DOWNLOADERS) / seconds).toFixed(0)} MB/s in ${seconds.toFixed(1)} s${ok ? "" : " (SHORT READS!)"}`]);
    rows.push(["  server RSS before → peak during (target: growth ≤ 10 MB)", `${before.toFixed(0)} MB → ${peak.toFixed(0)} MB (+${(peak - before).toFixed(1)} MB)`]);
  }, { ...s3.env, REELAY_LOG_LEVEL: "info" }); // the child-server harness waits for the "reelay listening" info line
} finally {
  await s3.close();
}

// 4: preview render
const preview = ONLY ? "(skipped: BENCH_ONLY)" : Bun.spawnSync(["bun", join(import.meta.dir, "preview-render.ts")], { stdout: "pipe", stderr: "pipe" }).stdout.toString().trim();

const w = Math.max(...rows.map((r) => r[0].length));
console.log(`\nvideo jobs benchmark (${new Date().toISOString()}, ${navigator.hardwareConcurrency} cores)\n`);
console.log(`${"measure".padEnd(w)} | result\n${"-".repeat(w)}-|-${"-".repeat(40)}`);
for (const [k, v] of rows) console.log(`${k.padEnd(w)} | ${v}`);
console.log(`\npreview render (bun bench/preview-render.ts):\n${preview}`);
