/**
 * Start time and memory of the compiled binary (issue 15), next to a bare compiled Bun.serve in
 * the same run, then the embeddings ceiling vs reelay (bench/embeddings.ts) — one command:
 *
 *   bun bench/foundation.ts [--runs 5] [--skip-embeddings] [--skip-wrk]
 *
 * Start → first 200 on /healthz and on /readyz, medians of `runs` cold starts, with a fresh data
 * dir (unpacked from the embedded seed) and an existing one; idle RSS 3 s after start (models load
 * on demand, so idle is the server and its database); RSS after 1,000 embeddings requests (16
 * concurrent single sentences) and 10 video renders (5 s, 480x832, submitted together), and the
 * peak. Everything on embedded PGlite, the zero-configuration default. Then, unless skipped,
 * authenticated GET /v1/models at 32 connections with wrk next to the bare server, and the
 * embeddings table.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { encode as encodePng } from "fast-png";
import { freePort } from "../test/support/harness.ts";
import { arg, prepareBinaries } from "./lib/binaries.ts";
import { haveWrk, median, table, wrk } from "./lib/wrk.ts";

const RUNS = Number(arg("runs", "5"));
const ADMIN = "bench-admin-token-0123456789";
const root = new URL("..", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "reelay-bench-"));
const { reelay, bare } = prepareBinaries(dir);

const rssMb = (pid: number, field: "VmRSS" | "VmHWM" = "VmRSS") => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;

interface Started { proc: ReturnType<typeof Bun.spawn>; port: number; healthzMs: number; readyzMs: number }

/** start → first 200 on /healthz, then on /readyz, polling every 2 ms */
async function start(command: string[], env: Record<string, string>): Promise<Started> {
  const port = freePort();
  const t0 = performance.now();
  const proc = Bun.spawn(command, { cwd: dir, env: { PATH: "/usr/bin:/bin", PORT: String(port), HOST: "127.0.0.1", REELAY_ADMIN_TOKEN: ADMIN, REELAY_LOG_LEVEL: "warn", REELAY_RATE_RPM: "0", REELAY_RATE_TPM: "0", REELAY_RATE_VIDEO_CONCURRENCY: "0", REELAY_PLUGINS_DIR: join(dir, "no-plugins"), ...env }, stdout: "ignore", stderr: "inherit" });
  const firstOk = async (path: string) => {
    for (;;) {
      if (await fetch(`http://127.0.0.1:${port}${path}`).then((r) => r.status === 200, () => false)) return performance.now() - t0;
      if (proc.exitCode !== null) throw new Error(`${command[0]} exited with ${proc.exitCode}`);
      await Bun.sleep(2);
    }
  };
  const healthzMs = await firstOk("/healthz");
  const readyzMs = await firstOk("/readyz");
  return { proc, port, healthzMs, readyzMs };
}
const stop = async (s: Started) => {
  s.proc.kill("SIGTERM");
  await s.proc.exited;
};

const load0 = loadavg()[0]!;
const cold = { fresh: [] as Started[], existing: [] as Started[], bare: [] as Started[] };
const existingDir = join(dir, "data-existing");
await stop(await start([reelay, "serve"], { REELAY_DATA_DIR: existingDir })); // creates it
const idle: number[] = [];
const bareIdle: number[] = [];
for (let i = 0; i < RUNS; i++) {
  const f = await start([reelay, "serve"], { REELAY_DATA_DIR: join(dir, `data-fresh-${i}`) });
  cold.fresh.push(f);
  await stop(f);
  const e = await start([reelay, "serve"], { REELAY_DATA_DIR: existingDir });
  cold.existing.push(e);
  await Bun.sleep(3000);
  idle.push(rssMb(e.proc.pid));
  await stop(e);
  const b = await start([bare], {});
  cold.bare.push(b);
  await Bun.sleep(3000);
  bareIdle.push(rssMb(b.proc.pid));
  await stop(b);
}

// ------------------------------------------------------------------ after work
const s = await start([reelay, "serve"], { REELAY_DATA_DIR: existingDir });
const base = `http://127.0.0.1:${s.port}`;
const admin = (path: string, body: unknown) => fetch(base + path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<any>);
const account = await admin("/admin/accounts", { name: "bench", credits: 1_000_000_000 });
const { key } = await admin(`/admin/accounts/${account.id}/keys`, { name: "bench" });
const post = (path: string, body: unknown) => fetch(base + path, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
let sent = 0, failed = 0;
const t0 = performance.now();
await Promise.all(Array.from({ length: 16 }, async () => {
  while (sent < 1000) {
    const i = sent++;
    const r = await post("/v1/embeddings", { model: "use-lite", input: `Benchmark sentence number ${i} about the quarterly budget.`, encoding_format: "base64" });
    await r.arrayBuffer();
    if (r.status !== 200) failed++;
  }
}));
const embeddingsSeconds = (performance.now() - t0) / 1000;
const rssAfterEmbeddings = rssMb(s.proc.pid);
const png = Buffer.from(encodePng({ width: 320, height: 240, data: new Uint8Array(320 * 240 * 3).map((_, i) => (i * 13) % 251), channels: 3 })).toString("base64");
const t1 = performance.now();
const jobs = await Promise.all(Array.from({ length: 10 }, async (_, i) => ((await (await post("/v1/videos/generations", { model: "preview-motion", prompt: "slow zoom in", seed: i, image: png })).json()) as any).id as string));
for (const id of jobs) {
  for (;;) {
    const j = (await (await fetch(`${base}/v1/videos/generations/${id}`, { headers: { authorization: `Bearer ${key}` } })).json()) as any;
    if (j.status === "completed") break;
    if (j.status === "failed") throw new Error(`render failed: ${JSON.stringify(j.error)}`);
    await Bun.sleep(250);
  }
}
const renderSeconds = (performance.now() - t1) / 1000;
const rssAfterWork = rssMb(s.proc.pid);
const peak = rssMb(s.proc.pid, "VmHWM");

let models: { r: Awaited<ReturnType<typeof wrk>>; b: Awaited<ReturnType<typeof wrk>> } | null = null;
if (!process.argv.includes("--skip-wrk") && haveWrk()) {
  const bareServer = await start([bare], {});
  await wrk(base + "/v1/models", { connections: 32, seconds: 1, headers: { authorization: `Bearer ${key}` } });
  const r = await wrk(base + "/v1/models", { connections: 32, seconds: 5, headers: { authorization: `Bearer ${key}` } });
  const b = await wrk(`http://127.0.0.1:${bareServer.port}/`, { connections: 32, seconds: 5 });
  models = { r, b };
  await stop(bareServer);
}
await stop(s);
rmSync(dir, { recursive: true, force: true });

const ms = (xs: number[]) => `${median(xs).toFixed(0)} ms`;
const runs = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(", ");
console.log(`\nreelay start and memory (compiled binary, embedded PGlite, ${cpus().length} cores, median of ${RUNS}; load average ${load0.toFixed(2)} → ${loadavg()[0]!.toFixed(2)})\n`);
console.log(table(["measure", "reelay", "bare Bun.serve", "target", "runs (reelay)"], [
  ["start → first /healthz 200, existing data dir", ms(cold.existing.map((x) => x.healthzMs)), ms(cold.bare.map((x) => x.healthzMs)), "≤ 150 ms", runs(cold.existing.map((x) => x.healthzMs))],
  ["start → first /healthz 200, fresh data dir", ms(cold.fresh.map((x) => x.healthzMs)), "", "≤ 1000 ms", runs(cold.fresh.map((x) => x.healthzMs))],
  ["start → /readyz 200, existing data dir", ms(cold.existing.map((x) => x.readyzMs)), "", "", runs(cold.existing.map((x) => x.readyzMs))],
  ["start → /readyz 200, fresh data dir", ms(cold.fresh.map((x) => x.readyzMs)), "", "", runs(cold.fresh.map((x) => x.readyzMs))],
  ["idle RSS 3 s after start", `${median(idle).toFixed(0)} MB`, `${median(bareIdle).toFixed(0)} MB`, "≤ 200 MB", runs(idle)],
  [`RSS after 1,000 embeddings requests (${(1000 / embeddingsSeconds).toFixed(0)} req/s, ${failed} failed)`, `${rssAfterEmbeddings.toFixed(0)} MB`, "", "", ""],
  [`RSS after those and 10 video renders (${renderSeconds.toFixed(1)} s)`, `${rssAfterWork.toFixed(0)} MB`, "", "", ""],
  ["peak RSS", `${peak.toFixed(0)} MB`, "", "", ""],
]));
if (models) {
  console.log();
  console.log(table(["GET /v1/models, 32 connections", "req/s", "p50 ms", "p99 ms", "errors"], [
    ["reelay (auth + key cache)", Math.round(models.r.rps), models.r.p50, models.r.p99, models.r.errors],
    ["bare Bun.serve", Math.round(models.b.rps), models.b.p50, models.b.p99, models.b.errors],
    ["ratio reelay / bare", (models.r.rps / models.b.rps).toFixed(2), "", "", ""],
  ]));
}
if (!process.argv.includes("--skip-embeddings")) {
  const r = Bun.spawnSync([process.execPath, join(root, "bench/embeddings.ts")], { cwd: root, stdout: "inherit", stderr: "inherit", env: process.env });
  if (r.exitCode !== 0) process.exitCode = r.exitCode ?? 1;
}
