/**
 * Where the compiled binary's memory goes (issue 15 item 3) and what Postgres and Redis need beside
 * it (docs/operations.md "Running in production") — one command:
 *
 *   bun bench/memory.ts [--runs 3] [--skip-parts] [--skip-services]
 *
 * Each row is a fresh process of dist/reelay started with one part more than the row above (a
 * models file enables one model at a time; DATABASE_URL swaps PGlite for PostgreSQL), measured 3 s
 * after it settled: VmRSS, and its anonymous part (heap, WASM memories, native allocations; the
 * file-backed rest is the binary's own pages, shared by every process running it). Medians of
 * `runs`. The delta column is the row's RSS minus the row it builds on.
 *
 * Then, unless skipped: a PostgreSQL cluster of its own (the server's defaults: shared_buffers
 * 128 MB) and a redis-server of its own, idle and after two reelay instances served 2,000 requests
 * over 200 accounts (pools open, rate-limit leases in Redis): their total RSS and PSS.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { encode as encodePng } from "fast-png";
import Redis from "ioredis";
import { freePort } from "../test/support/harness.ts";
import { startThrowawayPostgres } from "../test/support/throwaway-postgres.ts";
import { startThrowawayRedis } from "../test/support/throwaway-redis.ts";
import { arg, prepareBinaries } from "./lib/binaries.ts";
import { median, table } from "./lib/wrk.ts";

const RUNS = Number(arg("runs", "3"));
const SETTLE_MS = 3000;
const ADMIN = "bench-admin-token-0123456789";
const dir = mkdtempSync(join(tmpdir(), "reelay-memory-"));
const { reelay, bare } = prepareBinaries(dir);

interface Mem { rss: number; anon: number }
const statusOf = (pid: number, field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
const memOf = (pid: number): Mem => ({ rss: statusOf(pid, "VmRSS"), anon: statusOf(pid, "RssAnon") });
/** proportional set size (shared pages divided among the processes sharing them), MB */
const pssOf = (pid: number) => Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"))?.[1] ?? 0) / 1024;

interface Running { proc: ReturnType<typeof Bun.spawn>; base: string; key: string }
/** every process started, killed on the way out whatever happens */
const spawned: Array<ReturnType<typeof Bun.spawn>> = [];

function modelsFile(name: string, models: unknown[]): string {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify({ builtins: false, models }));
  return file;
}

async function start(command: string[], env: Record<string, string>): Promise<Running> {
  const port = freePort();
  const proc = Bun.spawn(command, {
    cwd: dir,
    env: { PATH: "/usr/bin:/bin", PORT: String(port), HOST: "127.0.0.1", REELAY_ADMIN_TOKEN: ADMIN, REELAY_LOG_LEVEL: "warn", REELAY_RATE_RPM: "0", REELAY_RATE_TPM: "0", REELAY_RATE_VIDEO_CONCURRENCY: "0", REELAY_PLUGINS_DIR: join(dir, "no-plugins"), ...env },
    stdout: "ignore",
    stderr: "inherit",
  });
  spawned.push(proc);
  const base = `http://127.0.0.1:${port}`;
  for (;;) {
    if (await fetch(base + "/readyz").then((r) => r.status === 200, () => false)) break;
    if (proc.exitCode !== null) throw new Error(`${command[0]} exited with ${proc.exitCode}`);
    await Bun.sleep(20);
  }
  return { proc, base, key: "" };
}
const stop = async (r: Running) => {
  r.proc.kill("SIGTERM");
  await r.proc.exited;
};
async function clientKey(r: Running): Promise<string> {
  const admin = (path: string, body: unknown) => fetch(r.base + path, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify(body) }).then((x) => x.json() as Promise<any>);
  const account = await admin("/admin/accounts", { name: "bench", credits: 1_000_000_000 });
  return (await admin(`/admin/accounts/${account.id}/keys`, { name: "bench" })).key;
}
const post = (r: Running, path: string, body: unknown) => fetch(r.base + path, { method: "POST", headers: { authorization: `Bearer ${r.key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
/** wait until every model listed has this state in /readyz */
async function modelsReady(r: Running, ids: string[]) {
  for (;;) {
    const ready = (await (await fetch(r.base + "/readyz")).json()) as { models: Array<{ id: string; state: string; error?: string }> };
    const failed = ready.models.find((m) => ids.includes(m.id) && m.state === "failed");
    if (failed) throw new Error(`${failed.id} failed to load: ${failed.error}`);
    if (ids.every((id) => ready.models.find((m) => m.id === id)?.state === "ready")) return;
    await Bun.sleep(50);
  }
}
const settled = async (r: Running) => (await Bun.sleep(SETTLE_MS), memOf(r.proc.pid!));

const png = Buffer.from(encodePng({ width: 320, height: 240, data: new Uint8Array(320 * 240 * 3).map((_, i) => (i * 13) % 251), channels: 3 })).toString("base64");
async function embed(r: Running, n: number) {
  for (let i = 0; i < n; i += 8) {
    await Promise.all(Array.from({ length: 8 }, async (_, j) => {
      const res = await post(r, "/v1/embeddings", { model: "use-lite", input: `Memory sentence number ${i + j} about the quarterly budget and the river.`, encoding_format: "base64" });
      if (res.status !== 200) throw new Error(`embeddings: ${res.status} ${await res.text()}`);
    }));
  }
}
async function render(r: Running, model: string) {
  const job = (await (await post(r, "/v1/videos/generations", { model, prompt: "slow zoom in", seconds: 5, image: png })).json()) as any;
  for (;;) {
    const j = (await (await fetch(`${r.base}/v1/videos/generations/${job.id}`, { headers: { authorization: `Bearer ${r.key}` } })).json()) as any;
    if (j.status === "completed") return;
    if (j.status !== "queued" && j.status !== "processing") throw new Error(`render: ${JSON.stringify(j)}`);
    await Bun.sleep(100);
  }
}
async function chat(r: Running, model: string) {
  const res = await post(r, "/v1/chat/completions", { model, messages: [{ role: "user", content: "Once upon a time" }], max_tokens: 200 });
  if (res.status !== 200) throw new Error(`chat: ${res.status} ${await res.text()}`);
}

const embedModel = (workers: number) => ({ id: "use-lite", plugin: "local-embeddings", pricing: { inputPerMillion: 1 }, options: { workers } });
const videoModel = { id: "preview-motion", plugin: "preview-video", pricing: { perSecond: 1 } };
const chatModel = { id: "stories260k", plugin: "local-llm", pricing: { inputPerMillion: 1, outputPerMillion: 1 }, options: { contextSize: 512, parallel: 4 }, contextLength: 512, maxOutputTokens: 256 };

interface Row { name: string; builds: string | null; mem: Mem[] }
const rows: Row[] = [];
function record(name: string, builds: string | null, m: Mem) {
  let row = rows.find((x) => x.name === name);
  if (!row) rows.push((row = { name, builds, mem: [] }));
  row.mem.push(m);
}

const pg = await startThrowawayPostgres();
let redis: Awaited<ReturnType<typeof startThrowawayRedis>> | undefined;
const cleanUp = async () => {
  for (const p of spawned) p.kill("SIGKILL");
  await redis?.stop().catch(() => {});
  await pg.destroy();
  rmSync(dir, { recursive: true, force: true });
};
process.on("SIGINT", () => void cleanUp().then(() => process.exit(130)));

/** one fresh process per part, measured after it settled */
async function measureParts() {
  const load0 = loadavg()[0]!;
  for (let run = 0; run < RUNS; run++) {
    const data = (n: string) => join(dir, `data-${n}-${run}`);
    // the bare server
    {
      const b = await start([bare], {});
      record("bare compiled Bun.serve", null, await settled(b));
      await stop(b);
    }
    // the app with no model, on PostgreSQL: Elysia, the routes, the OpenAPI document, postgres.js
    {
      const r = await start([reelay, "serve"], { DATABASE_URL: pg.url, REELAY_DATA_DIR: data("pg"), REELAY_MODELS_FILE: modelsFile("none", []) });
      record("reelay, no models, PostgreSQL", "bare compiled Bun.serve", await settled(r));
      await fetch(r.base + "/docs/json").then((x) => x.arrayBuffer());
      await fetch(r.base + "/console").then((x) => x.arrayBuffer());
      record("  + /docs/json and /console served once", "reelay, no models, PostgreSQL", await settled(r));
      await stop(r);
    }
    // the same on embedded PGlite
    {
      const r = await start([reelay, "serve"], { REELAY_DATA_DIR: data("none"), REELAY_MODELS_FILE: modelsFile("none", []) });
      record("reelay, no models, PGlite", "reelay, no models, PostgreSQL", await settled(r));
      await stop(r);
    }
    // the embeddings model: on the main thread, then 1 and 2 worker threads (each its own TF.js and weights)
    for (const workers of [0, 1, 2]) {
      const name = `use-lite loaded, ${workers === 0 ? "main thread" : `${workers} worker${workers > 1 ? "s" : ""}`}`;
      const r = await start([reelay, "serve"], { REELAY_DATA_DIR: data(`emb${workers}`), REELAY_MODELS_FILE: modelsFile(`emb${workers}`, [embedModel(workers)]), REELAY_PRELOAD_MODELS: "use-lite" });
      r.key = await clientKey(r);
      await modelsReady(r, ["use-lite"]);
      record(name, "reelay, no models, PGlite", await settled(r));
      await embed(r, 400);
      record(`  + 400 embeddings requests (${workers === 0 ? "main thread" : `${workers} worker${workers > 1 ? "s" : ""}`})`, name, await settled(r));
      await stop(r);
    }
    // the preview renderer: its worker threads start with the first job
    {
      const r = await start([reelay, "serve"], { REELAY_DATA_DIR: data("video"), REELAY_MODELS_FILE: modelsFile("video", [videoModel]) });
      r.key = await clientKey(r);
      record("preview-motion, no job yet", "reelay, no models, PGlite", await settled(r));
      await render(r, "preview-motion");
      record("  + one 5 s 480x832 render (render workers up)", "preview-motion, no job yet", await settled(r));
      await stop(r);
    }
    // the local chat model: llama.cpp and stories260K
    {
      const r = await start([reelay, "serve"], { REELAY_DATA_DIR: data("chat"), REELAY_MODELS_FILE: modelsFile("chat", [chatModel]), REELAY_PRELOAD_MODELS: "stories260k" });
      r.key = await clientKey(r);
      await modelsReady(r, ["stories260k"]);
      record("stories260k loaded (llama.cpp, 4 sequences)", "reelay, no models, PGlite", await settled(r));
      await chat(r, "stories260k");
      record("  + one 200-token answer", "stories260k loaded (llama.cpp, 4 sequences)", await settled(r));
      await stop(r);
    }
    // the default configuration (every built-in model), idle and after some of everything
    {
      const r = await start([reelay, "serve"], { REELAY_DATA_DIR: data("default") });
      r.key = await clientKey(r);
      record("default config (3 built-in models), idle", "reelay, no models, PGlite", await settled(r));
      await embed(r, 400);
      await render(r, "preview-motion");
      await chat(r, "stories260k");
      record("  + embeddings, a render and a chat", "default config (3 built-in models), idle", await settled(r));
      record("  peak (VmHWM)", null, { rss: statusOf(r.proc.pid!, "VmHWM"), anon: NaN });
      await stop(r);
    }
  }

  const mb = (x: number) => (Number.isFinite(x) ? `${x.toFixed(0)} MB` : "");
  const med = (r: Row, k: keyof Mem) => median(r.mem.map((m) => m[k]));
  console.log(`\nreelay memory by part (compiled binary, ${cpus().length} cores, median of ${RUNS}; load average ${load0.toFixed(2)} → ${loadavg()[0]!.toFixed(2)})\n`);
  console.log(table(["process", "RSS", "of it anonymous", "delta RSS", "runs (RSS)"], rows.map((r) => {
    const base = r.builds ? rows.find((x) => x.name === r.builds) : undefined;
    return [r.name, mb(med(r, "rss")), mb(med(r, "anon")), base ? `${med(r, "rss") - med(base, "rss") >= 0 ? "+" : ""}${(med(r, "rss") - med(base, "rss")).toFixed(0)} MB` : "", r.mem.map((m) => m.rss.toFixed(0)).join(", ")];
  })));

}

/** PostgreSQL and Redis of their own, idle and beside two reelay instances under load */
async function measureServices() {
  // ------------------------------------------------------------ PostgreSQL and Redis beside reelay
  redis = await startThrowawayRedis();
  const cluster = () => {
    // the postmaster's pid is the first line of postmaster.pid; its children are the backends and workers
    const postmaster = Number(readFileSync(join(pg.dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
    const pids = [postmaster, ...readdirSync("/proc").filter((p) => /^\d+$/.test(p)).map(Number).filter((p) => {
      try {
        return Number(readFileSync(`/proc/${p}/stat`, "utf8").split(") ")[1]!.split(" ")[1]) === postmaster;
      } catch {
        return false;
      }
    })];
    return { processes: pids.length, rss: pids.reduce((n, p) => n + statusOf(p, "VmRSS"), 0), pss: pids.reduce((n, p) => n + pssOf(p), 0) };
  };
  const redisMem = async () => {
    const c = new Redis(redis!.url);
    const info = await c.info("memory");
    const keys = await c.dbsize();
    c.disconnect();
    return { rss: statusOf(redis!.pid()!, "VmRSS"), used: Number(/^used_memory:(\d+)/m.exec(info)![1]) / 1024 / 1024, peak: Number(/^used_memory_peak:(\d+)/m.exec(info)![1]) / 1024 / 1024, keys };
  };
  const pgIdle = cluster();
  const redisIdle = await redisMem();
  const db = join(dir, "shared-db");
  mkdirSync(db);
  const env = { DATABASE_URL: pg.url, REDIS_URL: redis!.url, REELAY_MODELS_FILE: modelsFile("chat", [chatModel]), REELAY_PRELOAD_MODELS: "stories260k", REELAY_RATE_RPM: "600", REELAY_RATE_TPM: "1000000" };
  const a = await start([reelay, "serve"], { ...env, REELAY_DATA_DIR: join(db, "a"), REELAY_INSTANCE_ID: "a" });
  const b = await start([reelay, "serve"], { ...env, REELAY_DATA_DIR: join(db, "b"), REELAY_INSTANCE_ID: "b" });
  const keys = await Promise.all(Array.from({ length: 200 }, () => clientKey(a)));
  await modelsReady(a, ["stories260k"]);
  await modelsReady(b, ["stories260k"]);
  let sent = 0;
  let mostKeys = 0;
  const sampler = setInterval(async () => void (mostKeys = Math.max(mostKeys, (await redisMem()).keys)), 200);
  const failures = new Map<string, number>();
  await Promise.all(Array.from({ length: 64 }, async () => {
    while (sent < 2000) {
      const i = sent++;
      const r = (i >> 2) % 2 ? a : b; // chats (every 4th) alternate too
      const key = keys[i % keys.length]!;
      const res = i % 4 === 0
        ? await fetch(`${r.base}/v1/chat/completions`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "stories260k", messages: [{ role: "user", content: "Once" }], max_tokens: 4 }) })
        : await fetch(`${r.base}/v1/usage?limit=20`, { headers: { authorization: `Bearer ${key}` } });
      const text = await res.text();
      if (res.status !== 200) failures.set(`${res.status} ${text.slice(0, 160)}`, (failures.get(`${res.status} ${text.slice(0, 160)}`) ?? 0) + 1);
    }
  }));
  clearInterval(sampler);
  const pgBusy = cluster();
  const redisBusy = await redisMem();
  const reelayA = memOf(a.proc.pid!);
  await stop(a);
  await stop(b);
  for (const [what, n] of failures) console.log(`${n} requests failed: ${what}`);
  console.log(`\nPostgreSQL and Redis beside two reelay instances (2,000 requests over 200 accounts, 600 RPM limits: 1 in 4 a chat, the rest GET /v1/usage; 64 at once)\n`);
  console.log(table(["service", "idle", "after the load", "notes"], [
    [`PostgreSQL cluster (default settings), RSS / PSS of all its processes`, `${pgIdle.rss.toFixed(0)} / ${pgIdle.pss.toFixed(0)} MB (${pgIdle.processes} processes)`, `${pgBusy.rss.toFixed(0)} / ${pgBusy.pss.toFixed(0)} MB (${pgBusy.processes} processes)`, "PSS counts shared_buffers once; RSS counts it in every backend that touched it"],
    [`redis-server RSS / used_memory`, `${redisIdle.rss.toFixed(1)} / ${redisIdle.used.toFixed(1)} MB (${redisIdle.keys} keys)`, `${redisBusy.rss.toFixed(1)} / ${redisBusy.used.toFixed(1)} MB (peak ${redisBusy.peak.toFixed(1)} MB, ${mostKeys} keys at most)`, "rate-limit counters (600 RPM per key and account); they expire when idle"],
    [`a reelay instance (stories260k loaded, Postgres pool open)`, "", `${reelayA.rss.toFixed(0)} MB`, ""],
  ]));
}

try {
  if (!process.argv.includes("--skip-parts")) await measureParts();
  if (!process.argv.includes("--skip-services")) await measureServices();
} finally {
  await cleanUp();
}
