/**
 * The four video backends under load, through a real server (a child process: its RSS and CPU are
 * its own, read from /proc) and Postgres:
 *
 *   bun bench/video-backends.ts            (about a minute; needs Postgres at DATABASE_URL or 127.0.0.1:5432/test)
 *   BENCH_JOBS=200 bun bench/video-backends.ts
 *   BENCH_IMAGE=480x832 bun bench/video-backends.ts   (source images of that size; default 64x48)
 *   bun bench/video-backends.ts --profile /tmp/prof   (the server's CPU profile)
 *
 * 1,000 jobs (BENCH_JOBS) spread evenly over four fakes — ComfyUI (websocket push), Replicate
 * (signed webhooks to the hook route), fal and an OpenAI-style upstream (both polled every 1 s) —
 * each job taking 2–10 s upstream. The upstreams hold their queues until every job is submitted
 * and followed (a backlog), so all 1,000 are in flight at once; then they run.
 * Reports: submit requests per second (32 in flight, 8 clients); the server's CPU per job over the whole run;
 * the time from the upstream's completion (the fake's own clock) to the job's row turning
 * `completed` (from then on GET and the events stream show it), p50 / p99 per backend, against the
 * targets (≤ 1 s pushed, ≤ poll interval + 1 s polled); the server's RSS idle and with every job in
 * flight (target ≤ 150 MB above idle); and that every job completed, was submitted upstream once and
 * charged once. "Job completed" includes storing the result in the blob store (store-result.ts), as
 * a client waits for it; a backend's thumbnail is made later, when a client first asks for it
 * (src/modules/videos/thumbnails.ts).
 */
import { readFileSync } from "node:fs";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { createTestDatabase, dropDatabase, freePort } from "../test/support/harness.ts";
import { newClientOn, spawnServer } from "../test/support/child-server.ts";
import { startFakeComfy } from "../test/fakes/comfyui.ts";
import { startFakeReplicate } from "../test/fakes/replicate.ts";
import { startFakeFal } from "../test/fakes/fal.ts";
import { startFakeOpenAIVideos } from "../test/fakes/openai-videos.ts";
import { pngBase64 } from "../test/videos/support.ts";
import { cpuMs } from "./lib/proc-cpu.ts";

const JOBS = Number(process.env.BENCH_JOBS ?? 1_000);
/** BENCH_IMAGE=480x832: the source image's size (default 64x48; a real client's is a few hundred pixels a side, decoded at submit) */
const [IMAGE_W, IMAGE_H] = (process.env.BENCH_IMAGE ?? "64x48").split("x").map(Number) as [number, number];
/** `--profile DIR`: the server runs under `bun --cpu-prof` and writes its profile there when it stops (bench/lib/profile-top.ts reads it) */
const PROFILE_DIR = process.argv.includes("--profile") ? process.argv[process.argv.indexOf("--profile") + 1] ?? "." : null;
const RUN: [number, number] = [2_000, 10_000];
const POLL_MS = 1_000;
const IN_FLIGHT = 32;
/** clients submitting: one key serialises its submits on its concurrent-jobs count (bench/video-jobs.ts measures both) */
const CLIENTS = 8;
const PRICE = 10_000;
const KEYS = { BENCH_REPLICATE: "r8_bench_token_0123456789", BENCH_FAL: "fal-bench-key:0123456789", BENCH_OPENAI: "sk-bench-0123456789" };
const MODELS = ["comfy", "replicate", "fal", "openai"] as const;
type Backend = (typeof MODELS)[number];

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
const pct = (xs: number[], p: number) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]! : NaN);

const comfy = await startFakeComfy({ queueMs: 0, runMsRange: RUN });
const replicate = await startFakeReplicate({ apiKey: KEYS.BENCH_REPLICATE, startMs: 0, runMsRange: RUN });
const fal = await startFakeFal({ apiKey: KEYS.BENCH_FAL, queueMs: 0, runMsRange: RUN });
const openai = await startFakeOpenAIVideos({ apiKey: KEYS.BENCH_OPENAI, queueMs: 0, runMsRange: RUN });

const share = Math.ceil(JOBS / MODELS.length);
const model = (id: Backend, plugin: string, options: Record<string, unknown>) => ({ id, plugin, allowPrivateNetwork: true, pricing: { perSecond: PRICE }, options: { maxConcurrency: share, ...options } });
const file = join(mkdtempSync(join(tmpdir(), "reelay-bench-backends-")), "models.json");
writeFileSync(file, JSON.stringify({ builtins: false, models: [
  model("comfy", "comfyui", { baseUrl: comfy.url, workflowFile: join(import.meta.dir, "../examples/comfyui/wan22-i2v.json"), pollIntervalMs: 2_000 }),
  model("replicate", "replicate", { model: "wan-video/wan-2.2-i2v-fast", baseUrl: replicate.url, apiKeyEnv: "BENCH_REPLICATE", inputMapping: { size: "width,height" } }),
  model("fal", "fal", { app: "fal-ai/kling-video/v2.1/standard/image-to-video", baseUrl: fal.url, apiKeyEnv: "BENCH_FAL", pollIntervalMs: POLL_MS, inputMapping: { size: "width,height", seconds: "duration" } }),
  model("openai", "openai-videos", { baseUrl: openai.url, apiKeyEnv: "BENCH_OPENAI", upstreamModel: "sora-2", pollIntervalMs: POLL_MS, sizes: ["480x832"], seconds: [1] }),
] }));

const databaseUrl = await createTestDatabase();
const port = freePort();
const server = await spawnServer({
  DATABASE_URL: databaseUrl, REELAY_MODELS_FILE: file, REELAY_PUBLIC_URL: `http://127.0.0.1:${port}`,
  REELAY_SCHEDULER_POLL_MS: "100", REELAY_RATE_RPM: "100000000", REELAY_RATE_VIDEO_CONCURRENCY: String(JOBS * 2), ...KEYS,
}, { port, bunArgs: PROFILE_DIR ? ["--cpu-prof", "--cpu-prof-dir", PROFILE_DIR] : [] });
const sql = postgres(databaseUrl, { max: 2, onnotice: () => {} });

try {
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => newClientOn(server, 1_000_000_000)));
  const headers = { authorization: `Bearer ${clients[0]!.key}`, "content-type": "application/json" };
  const headersOf = (i: number) => ({ authorization: `Bearer ${clients[i % CLIENTS]!.key}`, "content-type": "application/json" });
  const image = pngBase64(IMAGE_W, IMAGE_H);
  const body = (m: Backend) => JSON.stringify({ model: m, prompt: "bench", image, seconds: 1, size: "480x832" });
  // one job per model first: plugins loaded, clips encoded, connections open — then the idle baseline
  const warm = await Promise.all(MODELS.map(async (m) => ((await (await fetch(`${server.url}/v1/videos/generations`, { method: "POST", headers, body: body(m) })).json()) as { id: string }).id));
  await waitAll(warm, 60_000);
  Bun.gc?.(true);
  await Bun.sleep(1_000);
  const idleRss = rssMb(server.pid);
  const cpu0 = cpuMs(server.pid);

  // submit: JOBS POSTs, IN_FLIGHT at a time, models round-robin; the upstreams keep them queued
  for (const fake of [comfy, replicate, fal, openai]) fake.hold();
  const ids: string[] = [];
  let next = 0;
  // a client of another route while the submits run: how long the server makes it wait (its event loop's share)
  const probe: number[] = [];
  let submitting = true;
  const prober = (async () => {
    while (submitting) {
      const p0 = performance.now();
      await (await fetch(`${server.url}/healthz`)).arrayBuffer();
      probe.push(performance.now() - p0);
      await Bun.sleep(10);
    }
  })();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: IN_FLIGHT }, async (_, worker) => {
    while (next < JOBS) {
      const m = MODELS[next++ % MODELS.length]!;
      const res = await fetch(`${server.url}/v1/videos/generations`, { method: "POST", headers: headersOf(worker), body: body(m) });
      if (res.status !== 202) throw new Error(`submit: ${res.status} ${await res.text()}`);
      ids.push(((await res.json()) as { id: string }).id);
    }
  }));
  const submitSeconds = (performance.now() - t0) / 1000;
  submitting = false;
  await prober;

  // every job submitted upstream and followed (processing): RSS over 3 s of that, then the upstreams run
  let inFlight = 0;
  for (let i = 0; i < 600 && inFlight < ids.length; i++) {
    const [{ n }] = await sql`SELECT count(*)::int AS n FROM video_jobs WHERE status = 'processing' AND id IN ${sql(ids)}`;
    inFlight = n;
    if (n < ids.length) await Bun.sleep(100);
  }
  let peakRss = 0;
  for (let i = 0; i < 30; i++) {
    peakRss = Math.max(peakRss, rssMb(server.pid));
    await Bun.sleep(100);
  }
  for (const fake of [comfy, replicate, fal, openai]) fake.release();
  await waitAll(ids, 120_000);
  const cpuPerJob = (cpuMs(server.pid) - cpu0) / ids.length;

  // upstream completion → the job's row completed, per backend
  const rows = await sql`SELECT id, model, plugin_handle AS handle, status, (extract(epoch FROM completed_at) * 1000)::float8 AS done FROM video_jobs WHERE id IN ${sql(ids)}`;
  const upstreamEnd: Record<Backend, (id: string) => number | undefined> = {
    comfy: (id) => comfy.prompts.get(id)?.endedAt,
    replicate: (id) => replicate.predictions.get(id)?.completedAt,
    fal: (id) => fal.completedAt(id.split(" ")[0]!),
    openai: (id) => openai.endedAt(id),
  };
  const lag: Record<Backend, number[]> = { comfy: [], replicate: [], fal: [], openai: [] };
  let completed = 0;
  for (const r of rows) {
    if (r.status !== "completed") continue;
    completed++;
    const m = r.model as Backend;
    const upstreamId = String(r.handle).slice(String(r.handle).indexOf("/") + 1);
    const end = upstreamEnd[m](upstreamId);
    if (end !== undefined) lag[m].push(r.done - end);
  }
  const [{ charges, charged }] = await sql`SELECT count(*)::int AS charges, count(DISTINCT ref)::int AS charged FROM ledger WHERE kind = 'charge' AND ref IN ${sql(ids)}`;
  const submits = comfy.count("prompt") + replicate.count("create") + fal.count("submit") + openai.count("create") - warm.length;

  const target: Record<Backend, string> = { comfy: "≤ 1 s (pushed: websocket)", replicate: "≤ 1 s (pushed: webhook)", fal: `≤ ${(POLL_MS + 1000) / 1000} s (polled every ${POLL_MS / 1000} s)`, openai: `≤ ${(POLL_MS + 1000) / 1000} s (polled every ${POLL_MS / 1000} s)` };
  const table: Array<[string, string]> = [
    ["jobs submitted / completed (2–10 s each upstream)", `${ids.length} / ${completed}`],
    ["upstream submits / jobs charged / charges", `${submits} / ${charged} / ${charges}`],
    [`submit rate (${IN_FLIGHT} in flight, ${CLIENTS} clients, ${IMAGE_W}x${IMAGE_H} PNGs)`, `${(ids.length / submitSeconds).toFixed(0)} req/s`],
    ["GET /healthz during the submits, p50 / p99 / max", `${pct(probe, 50).toFixed(1)} / ${pct(probe, 99).toFixed(1)} / ${Math.max(...probe).toFixed(1)} ms (${probe.length})`],
    ["server CPU per job (submit → completed, all work)", `${cpuPerJob.toFixed(1)} ms`],
    ...MODELS.map((m): [string, string] => [`${m}: upstream done → job completed, p50 / p99 (n)`, `${(pct(lag[m], 50) / 1000).toFixed(3)} s / ${(pct(lag[m], 99) / 1000).toFixed(3)} s (${lag[m].length})   target ${target[m]}`]),
    [`server RSS idle → with ${inFlight} jobs in flight`, `${idleRss.toFixed(0)} MB → ${peakRss.toFixed(0)} MB (+${(peakRss - idleRss).toFixed(0)} MB; target ≤ +150 MB)`],
  ];
  const w = Math.max(...table.map((r) => r[0].length));
  console.log(`\nvideo backends: ${ids.length} jobs over ComfyUI, Replicate, fal and an OpenAI-style upstream (fakes), real server + Postgres\n`);
  for (const [k, v] of table) console.log(`  ${k.padEnd(w)}  ${v}`);
} finally {
  await sql.end();
  await server.stop();
  await dropDatabase(databaseUrl);
  await Promise.all([comfy.stop(), replicate.stop(), fal.stop(), openai.stop()]);
}

/** Wait until every job is final. */
async function waitAll(jobIds: string[], timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const rows = await sql`SELECT status, count(*)::int AS n FROM video_jobs WHERE id IN ${sql(jobIds)} GROUP BY status`;
    const counts = Object.fromEntries(rows.map((r) => [r.status, r.n])) as Record<string, number>;
    if ((counts.completed ?? 0) + (counts.failed ?? 0) >= jobIds.length) return;
    if (Date.now() > end) throw new Error(`jobs still running after ${timeoutMs} ms: ${JSON.stringify(counts)}`);
    await Bun.sleep(200);
  }
}
