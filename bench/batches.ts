/**
 * Batches (issue 30), one command:  bun bench/batches.ts
 *
 * reelay (`bun src/main.ts serve`, real Postgres) with a chat and an embeddings model on a fast fake
 * upstream. For each endpoint, in one run:
 *  - live req/s: BENCH_SLOTS closed-loop clients on the live route (the same upstream concurrency
 *    the batch scheduler gets: REELAY_BATCH_CONCURRENCY × REELAY_BATCH_SHARE % = BENCH_SLOTS);
 *  - a live client at 50 req/s alone: its p99;
 *  - a BENCH_LINES-line batch (default 10,000) through the SDK-shaped HTTP calls (files, batches):
 *    lines per second (validation to completed), reelay CPU per line, RSS above idle (peak),
 *    with the same 50 req/s live client running: its p99 then.
 * Env: BENCH_LINES (10000), BENCH_SLOTS (16), BENCH_SECONDS (5) per live measurement; BENCH_PROFILE=<dir>
 * runs the server under `bun --cpu-prof` (profile written there), BENCH_PRELOAD=<file> preloads a script into it.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnFakeOpenAI } from "./lib/fake-openai-process.ts";
import { createTestDatabase, dropDatabase, freePort } from "../test/support/harness.ts";
import { cpuMs } from "./lib/proc-cpu.ts";

const ROOT = join(import.meta.dir, "..");
const ADMIN = "bench-admin-token-0123456789";
const LINES = Number(process.env.BENCH_LINES ?? 10_000);
const SLOTS = Number(process.env.BENCH_SLOTS ?? 16);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
const p99 = (xs: number[]) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))]! : NaN);

const BODIES = {
  "/v1/chat/completions": (i: number) => ({ model: "chat-a", messages: [{ role: "user", content: `question ${i}` }], max_tokens: 8 }),
  "/v1/embeddings": (i: number) => ({ model: "emb", input: `text number ${i}` }),
} as const;
type Endpoint = keyof typeof BODIES;

async function main() {
  // the upstream in a process of its own: its work for the batch must not delay the measuring live client
  const fake = await spawnFakeOpenAI(8);
  const dir = mkdtempSync(join(tmpdir(), "reelay-bench-batches-"));
  const databaseUrl = await createTestDatabase();
  const models = join(dir, "models.json");
  writeFileSync(models, JSON.stringify({
    builtins: false,
    models: [
      { id: "chat-a", plugin: "openai-compatible", options: { baseUrl: fake.url }, pricing: { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000 }, maxOutputTokens: 64 },
      { id: "emb", plugin: "openai-compatible", options: { baseUrl: fake.url, capabilities: ["embeddings"] }, pricing: { inputPerMillion: 100_000 } },
    ],
  }));
  const port = freePort();
  const proc = Bun.spawn(["bun", ...(process.env.BENCH_PRELOAD ? ["--preload", process.env.BENCH_PRELOAD] : []), ...(process.env.BENCH_PROFILE ? ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : []), "src/main.ts", "serve"], {
    cwd: ROOT, stdout: "ignore", stderr: "inherit",
    env: {
      ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), HOST: "127.0.0.1", REELAY_ADMIN_TOKEN: ADMIN, REELAY_LOG_LEVEL: "warn", REELAY_MODELS_FILE: models,
      REELAY_PLUGINS_DIR: "/nonexistent", REELAY_RATE_RPM: "1000000000", REELAY_RATE_TPM: "1000000000000", REELAY_DATA_DIR: join(dir, "data"),
      REELAY_BATCH_CONCURRENCY: String(SLOTS * 2), REELAY_BATCH_SHARE: "50", REELAY_BATCH_SLICE_LINES: "200", REELAY_SCHEDULER_POLL_MS: "50",
    },
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    for (let i = 0; !(await fetch(url + "/healthz").then((r) => r.ok, () => false)); i++) {
      if (i > 600) throw new Error("reelay did not come up");
      await Bun.sleep(50);
    }
    const admin = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
    const acct = (await (await fetch(url + "/admin/accounts", { method: "POST", headers: admin, body: JSON.stringify({ name: "bench", credits: 1_000_000_000_000 }) })).json()) as { id: string };
    const key = ((await (await fetch(`${url}/admin/accounts/${acct.id}/keys`, { method: "POST", headers: admin, body: JSON.stringify({ name: "bench" }) })).json()) as { key: string }).key;
    const auth = { authorization: `Bearer ${key}` };
    const post = (path: string, body: unknown) => fetch(url + path, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify(body) });

    /** closed loop: `n` clients for SECONDS; req/s */
    const closedLoop = async (endpoint: Endpoint, n: number) => {
      const until = performance.now() + SECONDS * 1000;
      let done = 0;
      await Promise.all(Array.from({ length: n }, async (_, c) => {
        for (let i = 0; performance.now() < until; i++) if ((await post(endpoint, BODIES[endpoint](c * 1_000_000 + i))).ok) done++;
      }));
      return done / SECONDS;
    };
    /** open loop: 50 req/s until `stop()`; latencies in ms */
    const liveClient = (endpoint: Endpoint) => {
      const lat: number[] = [];
      let stopped = false;
      const running = (async () => {
        const pending: Promise<unknown>[] = [];
        for (let i = 0; !stopped; i++) {
          const t0 = performance.now();
          pending.push(post(endpoint, BODIES[endpoint](i)).then(async (r) => { await r.arrayBuffer(); if (r.ok) lat.push(performance.now() - t0); }));
          await Bun.sleep(20);
        }
        await Promise.all(pending);
      })();
      return { stop: async () => { stopped = true; await running; return lat; } };
    };

    const rows: string[][] = [];
    await closedLoop("/v1/chat/completions", 4); // warm-up
    for (const endpoint of Object.keys(BODIES) as Endpoint[]) {
      const liveRps = await closedLoop(endpoint, SLOTS);
      const alone = liveClient(endpoint);
      await Bun.sleep(SECONDS * 1000);
      const aloneP99 = p99(await alone.stop());

      const idle = rssMb(proc.pid);
      const text = Array.from({ length: LINES }, (_, i) => JSON.stringify({ custom_id: `l${i}`, method: "POST", url: endpoint, body: BODIES[endpoint](i) })).join("\n") + "\n";
      const form = new FormData();
      form.set("purpose", "batch");
      form.set("file", new Blob([text]), "input.jsonl");
      const file = (await (await fetch(url + "/v1/files", { method: "POST", headers: auth, body: form })).json()) as { id: string };
      const cpu0 = cpuMs(proc.pid);
      const t0 = performance.now();
      const batch = (await (await post("/v1/batches", { input_file_id: file.id, endpoint, completion_window: "24h" })).json()) as { id: string };
      const during = liveClient(endpoint);
      let peak = idle;
      // the loop's longest stall since the previous scrape: one scrape now starts the window at the batch
      const scrapeLoopMaxMs = async () => Number(/nodejs_eventloop_lag_seconds\{quantile="1"\} ([\d.e-]+)/.exec(await (await fetch(url + "/metrics", { headers: { authorization: `Bearer ${ADMIN}` } })).text())?.[1] ?? 0) * 1000;
      await scrapeLoopMaxMs();
      let loopMax = 0;
      let lastScrape = performance.now();
      let b: any;
      for (;;) {
        peak = Math.max(peak, rssMb(proc.pid));
        if (performance.now() - lastScrape >= 1000) {
          lastScrape = performance.now();
          loopMax = Math.max(loopMax, await scrapeLoopMaxMs());
        }
        b = await (await fetch(`${url}/v1/batches/${batch.id}`, { headers: auth })).json();
        if (["completed", "failed", "expired", "cancelled"].includes(b.status)) break;
        await Bun.sleep(200);
      }
      const secs = (performance.now() - t0) / 1000;
      const cpu = cpuMs(proc.pid) - cpu0;
      const duringP99 = p99(await during.stop());
      const linesPerSec = b.request_counts.completed / secs;
      rows.push([endpoint, String(LINES), b.status, `${b.request_counts.completed}/${b.request_counts.failed}`, linesPerSec.toFixed(0), liveRps.toFixed(0), `${((linesPerSec / liveRps) * 100).toFixed(0)}%`,
        ((cpu * 1000) / LINES).toFixed(0), (peak - idle).toFixed(0), aloneP99.toFixed(1), duringP99.toFixed(1), (duringP99 - aloneP99).toFixed(1), loopMax.toFixed(0)]);
    }
    const head = ["endpoint", "lines", "status", "ok/failed", "lines/s", `live req/s (${SLOTS} conns)`, "batch/live", "CPU µs/line", "RSS above idle MB", "live p99 alone ms", "live p99 during ms", "added p99 ms", "event-loop stall max ms"];
    console.log(`| ${head.join(" | ")} |\n|${head.map(() => "---").join("|")}|\n${rows.map((r) => `| ${r.join(" | ")} |`).join("\n")}`);
    console.log("\ntargets: batch/live ≥ 50 %; RSS above idle ≤ 100 MB; added p99 ≤ 10 ms");
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
    await fake.stop();
    await dropDatabase(databaseUrl);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
