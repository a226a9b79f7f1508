/**
 * Remote GPU provider under load, through the real server and scheduler:
 *   bun bench/remote-gpu.ts [jobs=1000] [concurrency=200] [runMs=2000] [pollIntervalMs=1000]
 *
 * A fake RunPod worker answers every job in `runMs` (no queue time); one model with
 * maxConcurrency `concurrency`. 1,000 jobs are submitted through POST /v1/videos/generations and
 * waited for through the list endpoint. Ideal wall time = ceil(jobs / concurrency) × runMs.
 * Reports wall time vs ideal, /status calls per job and the scheduling overhead per job.
 * Needs the local Postgres (DATABASE_URL or postgres://postgres@127.0.0.1:5432/test).
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startFakeGpuWorker } from "../test/fakes/gpu-worker.ts";
import { startTestServer } from "../test/support/harness.ts";
import { CONTRACT_PNG } from "@reelay/plugin-sdk/contract";

const [jobs = 1000, concurrency = 200, runMs = 2000, pollIntervalMs = 1000] = process.argv.slice(2).map(Number);

const worker = await startFakeGpuWorker({ queueMs: 0, runMs, maxRenderSeconds: 1 });
const file = join(mkdtempSync(join(tmpdir(), "reelay-bench-")), "models.json");
writeFileSync(file, JSON.stringify({ builtins: false, models: [{
  id: "wan-i2v", plugin: "remote-gpu-video", pricing: { perSecond: 1 },
  options: { baseUrl: worker.url, allowPrivateNetwork: true, maxConcurrency: concurrency, pollIntervalMs },
}] }));
const s = await startTestServer({
  REELAY_MODELS_FILE: file, REELAY_SCHEDULER_POLL_MS: "100", REELAY_RATE_RPM: "1000000", REELAY_RATE_VIDEO_CONCURRENCY: String(jobs * 2),
});
try {
  const c = await s.newClient({ credits: 1_000_000_000 });
  const h = { authorization: `Bearer ${c.key}`, "content-type": "application/json" };
  const image = Buffer.from(CONTRACT_PNG).toString("base64");

  const t0 = performance.now();
  const ids: string[] = [];
  for (let i = 0; i < jobs; i += 50) {
    const batch = await Promise.all(Array.from({ length: Math.min(50, jobs - i) }, async () => {
      const res = await fetch(`${s.url}/v1/videos/generations`, { method: "POST", headers: h, body: JSON.stringify({ model: "wan-i2v", prompt: "bench", image, seconds: 1 }) });
      if (res.status !== 202) throw new Error(`submit: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { id: string }).id;
    }));
    ids.push(...batch);
  }
  const submitMs = performance.now() - t0;

  let completed = 0, failed = 0;
  for (;;) {
    completed = failed = 0;
    let after: string | undefined;
    for (;;) {
      const page = (await (await fetch(`${s.url}/v1/videos/generations?limit=100${after ? `&after=${after}` : ""}`, { headers: h })).json()) as { data: Array<{ id: string; status: string }>; last_id?: string; has_more?: boolean };
      for (const j of page.data) j.status === "completed" ? completed++ : j.status === "failed" ? failed++ : 0;
      if (!page.has_more || !page.data.length) break;
      after = page.data.at(-1)!.id;
    }
    if (completed + failed >= jobs) break;
    if (performance.now() - t0 > 180_000) break;
    await Bun.sleep(250);
  }
  const wallMs = performance.now() - t0;
  const idealMs = Math.ceil(jobs / concurrency) * runMs;
  const statusCalls = worker.count("status");
  const runCalls = worker.count("run");

  const rows: Array<[string, string]> = [
    ["jobs submitted / completed / failed", `${ids.length} / ${completed} / ${failed}`],
    ["model maxConcurrency", String(concurrency)],
    ["worker time per job", `${runMs} ms`],
    ["poll interval (plugin pollIntervalMs)", `${pollIntervalMs} ms`],
    ["submit phase (1,000 POSTs, 50 at a time)", `${(submitMs / 1000).toFixed(2)} s`],
    ["wall time, first submit → last completed", `${(wallMs / 1000).toFixed(2)} s`],
    ["ideal (ceil(jobs/concurrency) × run time)", `${(idealMs / 1000).toFixed(2)} s`],
    ["wall / ideal", (wallMs / idealMs).toFixed(2)],
    ["last submit → last completed", `${((wallMs - submitMs) / 1000).toFixed(2)} s`],
    ["completed jobs per second (worker bound: concurrency/run time)", `${(jobs / (wallMs / 1000)).toFixed(1)} (${(concurrency / (runMs / 1000)).toFixed(0)})`],
    ["/run calls (1 per job = no duplicates)", String(runCalls)],
    ["/status calls per job", (statusCalls / jobs).toFixed(2)],
    ["peak worker jobs in flight ≤ concurrency", String(peakInFlight(worker.jobs, runMs))],
  ];
  const w = Math.max(...rows.map((r) => r[0].length));
  console.log(`\nremote-gpu-video: ${jobs} jobs, fake RunPod worker, real scheduler + Postgres\n`);
  for (const [k, v] of rows) console.log(`  ${k.padEnd(w)}  ${v}`);
} finally {
  await s.close();
  await worker.stop();
}

/** the most worker jobs whose [submittedAt, submittedAt + runMs) windows overlap */
function peakInFlight(jobsById: Map<string, { submittedAt: number }>, run: number): number {
  const edges = [...jobsById.values()].flatMap((j) => [[j.submittedAt, 1], [j.submittedAt + run, -1]] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let cur = 0, peak = 0;
  for (const [, d] of edges) peak = Math.max(peak, (cur += d));
  return peak;
}
