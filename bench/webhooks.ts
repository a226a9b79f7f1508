/**
 * `bun bench/webhooks.ts` (about 1–2 min; Postgres at DATABASE_URL or 127.0.0.1:5432/test).
 * reelay runs as a child process (`bun src/main.ts serve`), so its RSS and CPU are read from /proc.
 *
 *   1. 1,000 jobs of 50 accounts finishing together, each with a webhook to a local receiver: the
 *      jobs (scripted plugin, all in flight) are held `processing` until a file appears, then succeed
 *      at their next poll. Measured: how long the 1,000 completions took (and, on a fresh server,
 *      the same burst without webhooks), completion → delivery latency (from the event's
 *      `timestamp`, set in the completing transaction, to the receiver's arrival time) p50/p99/max,
 *      deliveries per second, duplicates.
 *   2. 500 concurrent progress streams (GET …/events) on 500 running jobs whose progress moves:
 *      reelay's RSS and CPU over a 10 s window without streams, then with them; events received.
 *
 * Targets (issue 20): delivery p99 ≤ 1 s after completion; 500 streams ≤ 50 MB extra RSS.
 * BENCH_JOBS, BENCH_ACCOUNTS and BENCH_STREAMS change the sizes.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { newClientOn, spawnServer, type ChildServer } from "../test/support/child-server.ts";
import { createTestDatabase, dropDatabase } from "../test/support/harness.ts";
import { pngBase64, scriptedEnv } from "../test/videos/support.ts";

const JOBS = Number(process.env.BENCH_JOBS ?? 1_000);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 500);
const ACCOUNTS = Number(process.env.BENCH_ACCOUNTS ?? 50);
const IMG = pngBase64(64, 48);
const SECRET_KEY = "bench-webhooks-secret-key-0123456789abcdef";

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;
/** user+system CPU seconds of a process (clock ticks of 10 ms) */
const cpuSec = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
};
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;
const log = (m: string) => console.error(`[bench] ${m}`);
const rows: Array<[string, string, string]> = [];

async function withServer<T>(env: Record<string, string>, run: (s: ChildServer, db: postgres.Sql) => Promise<T>): Promise<T> {
  const databaseUrl = await createTestDatabase();
  const s = await spawnServer({
    DATABASE_URL: databaseUrl, REELAY_SCHEDULER_POLL_MS: "100", REELAY_RATE_RPM: "100000000",
    REELAY_SECRET_KEY: SECRET_KEY, REELAY_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8", ...env,
  });
  const db = postgres(databaseUrl, { max: 2, onnotice: () => {} });
  try {
    return await run(s, db);
  } catch (e) {
    // the server's own errors say more than the client's 500
    for (const l of s.logLines().filter((l) => Number(l.level) >= 50).slice(-5)) console.error(JSON.stringify(l).slice(0, 2000));
    throw e;
  } finally {
    await db.end();
    await s.stop();
    await dropDatabase(databaseUrl);
  }
}

/** 5xx answers are retried (and counted): postgres.js 3.4.9 can fail a transaction with UNSAFE_TRANSACTION when its pipeline is full (porsager/postgres#823) */
let serverErrors = 0;

async function submitAll(s: ChildServer, keys: string[], model: string, n: number, inFlight = 32): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  const body = JSON.stringify({ model, prompt: "bench", image: IMG, seconds: 1 });
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < n) {
      const key = keys[next++ % keys.length]!;
      for (let attempt = 1; ; attempt++) {
        const res = await fetch(`${s.url}/v1/videos/generations`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body });
        const j = (await res.json()) as { id?: string };
        if (res.status === 202 && j.id) {
          ids.push(j.id);
          break;
        }
        if (res.status < 500 || attempt === 3) throw new Error(`submit: ${res.status} ${JSON.stringify(j)}`);
        serverErrors++;
      }
    }
  }));
  return ids;
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 120_000) {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(100);
  }
}

// 1. a burst of completions, each with a webhook; the same burst without webhooks for comparison
interface Burst {
  /** first → last completion commit, from the jobs' completed_at */
  spanMs: number;
  /** reelay's CPU seconds from the release until every delivery (or completion) */
  cpu: number;
  arrivals: Array<{ id: string; at: number; completedAt: number }>;
  /** all deliveries made due again at once: time until the last arrived */
  drain?: { ms: number } | null;
}

async function burst(withWebhooks: boolean): Promise<Burst> {
  const release = join(tmpdir(), `reelay-bench-release-${process.pid}-${withWebhooks}`);
  rmSync(release, { force: true });
  const arrivals: Burst["arrivals"] = [];
  const receiver = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const at = Date.now();
      const event = JSON.parse(await req.text()) as { timestamp: string };
      arrivals.push({ id: req.headers.get("webhook-id")!, at, completedAt: Date.parse(event.timestamp) });
      return new Response(null, { status: 204 });
    },
  });
  try {
    return await withServer(scriptedEnv([{ id: "burst", options: { durationMs: 0, pollIntervalMs: 200, maxConcurrency: JOBS, releaseFile: release } }]), async (s, db) => {
      // jobs of many accounts, as in production: one account's completions queue on its balance row
      const clients = await Promise.all(Array.from({ length: ACCOUNTS }, () => newClientOn(s, 1e13, { concurrent_video_jobs: 1_000_000 })));
      if (withWebhooks) {
        for (const [i, c] of clients.entries()) {
          // one URL per account, as different receivers would be (an instance gives one URL at most 16 slots)
          const ep = await fetch(`${s.url}/v1/webhooks`, { method: "POST", headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" }, body: JSON.stringify({ url: `http://127.0.0.1:${receiver.port}/hook/${i}` }) });
          if (ep.status !== 201) throw new Error(`endpoint: ${ep.status} ${await ep.text()}`);
        }
      }
      log(`submitting ${JOBS} jobs over ${ACCOUNTS} accounts${withWebhooks ? ", each account with a webhook endpoint" : ", no webhooks"}`);
      await submitAll(s, clients.map((c) => c.key), "burst", JOBS);
      await waitFor(`${JOBS} jobs processing`, async () => (await db`SELECT count(*)::int AS n FROM video_jobs WHERE status = 'processing'`)[0]!.n === JOBS);
      await Bun.sleep(500);
      const cpu0 = cpuSec(s.pid);
      log("release: the jobs finish at their next poll (≤ 200 ms)");
      writeFileSync(release, "go");
      if (withWebhooks) await waitFor(`${JOBS} deliveries`, async () => new Set(arrivals.map((a) => a.id)).size >= JOBS, 120_000);
      else await waitFor(`${JOBS} completions`, async () => (await db`SELECT count(*)::int AS n FROM video_jobs WHERE status = 'completed'`)[0]!.n === JOBS);
      const cpu = cpuSec(s.pid) - cpu0;
      await Bun.sleep(1_000); // duplicates would show up now
      const [span] = await db`SELECT extract(epoch FROM max(completed_at) - min(completed_at)) * 1000 AS ms FROM video_jobs WHERE status = 'completed'`;
      let drain: Burst["drain"] = null;
      if (withWebhooks) {
        // the delivery rate on its own: every delivery due again at once (what a replay does), woken like a new one
        const before = arrivals.length;
        const t0 = Date.now();
        await db`UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = now(), give_up_at = now() + interval '1 day', lease_owner = NULL, lease_expires_at = NULL`;
        await db`SELECT pg_notify('reelay_webhooks', '')`;
        await waitFor(`${JOBS} deliveries again`, async () => arrivals.length - before >= JOBS, 120_000);
        drain = { ms: Math.max(...arrivals.slice(before).map((a) => a.at)) - t0 };
      }
      return { spanMs: Number(span!.ms), cpu, arrivals: arrivals.slice(0, JOBS), drain };
    });
  } finally {
    receiver.stop(true);
    if (existsSync(release)) rmSync(release);
  }
}

{
  const plain = await burst(false);
  const hooked = await burst(true);
  const { arrivals } = hooked;
  const latencies = arrivals.map((a) => a.at - a.completedAt);
  const first = Math.min(...arrivals.map((a) => a.completedAt));
  const last = Math.max(...arrivals.map((a) => a.at));
  const unique = new Set(arrivals.map((a) => a.id)).size;
  rows.push([`${JOBS} jobs (${ACCOUNTS} accounts): completions, first → last commit, without webhooks`, `${plain.spanMs.toFixed(0)} ms (reelay CPU ${plain.cpu.toFixed(2)} s)`, "within 1 s"]);
  rows.push([`the same with a webhook each`, `${hooked.spanMs.toFixed(0)} ms (reelay CPU ${hooked.cpu.toFixed(2)} s, deliveries included)`, "within 1 s"]);
  rows.push(["completion → delivery p50", `${pct(latencies, 50).toFixed(0)} ms`, ""]);
  rows.push(["completion → delivery p99", `${pct(latencies, 99).toFixed(0)} ms (max ${Math.max(...latencies).toFixed(0)} ms)`, "≤ 1000 ms"]);
  rows.push(["deliveries per second, following the completions (first completion → last delivery)", `${((unique / (last - first)) * 1000).toFixed(0)} /s`, ""]);
  rows.push([`deliveries per second, ${JOBS} due at once (${ACCOUNTS} receiver URLs)`, `${((JOBS / hooked.drain!.ms) * 1000).toFixed(0)} /s (${hooked.drain!.ms} ms)`, ""]);
  rows.push(["duplicate deliveries", `${arrivals.length - unique}`, "0 (receiver always 2xx)"]);
}

// 2. many progress streams
interface SseConn {
  events: number;
  firstAt: number | null;
  close(): void;
}

/** A raw HTTP/1.1 SSE connection (fetch would cap concurrent connections per host); counts events. */
function openSse(port: number, key: string, id: string): SseConn {
  const conn: SseConn = { events: 0, firstAt: null, close: () => sock.destroy() };
  const sock = connect({ host: "127.0.0.1", port }, () => {
    sock.write(`GET /v1/videos/generations/${id}/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${key}\r\nAccept: text/event-stream\r\n\r\n`);
  });
  sock.setEncoding("utf8");
  sock.on("data", (chunk: string) => {
    const n = chunk.split("\nevent: ").length - 1;
    if (n > 0) {
      conn.events += n;
      conn.firstAt ??= Date.now();
    }
  });
  sock.on("error", () => {});
  return conn;
}

async function window(pid: number, ms: number) {
  const rss: number[] = [];
  const c0 = cpuSec(pid);
  const t0 = performance.now();
  while (performance.now() - t0 < ms) {
    rss.push(rssMb(pid));
    await Bun.sleep(250);
  }
  const seconds = (performance.now() - t0) / 1000;
  return { rss: pct(rss, 50), rssMax: Math.max(...rss), cpuPct: ((cpuSec(pid) - c0) / seconds) * 100 };
}

await withServer(scriptedEnv([{ id: "moving", options: { durationMs: 90_000, pollIntervalMs: 1_000, maxConcurrency: STREAMS } }]), async (s, db) => {
  const c = await newClientOn(s, 1e13, { concurrent_video_jobs: 1_000_000 });
  log(`submitting ${STREAMS} jobs whose progress moves 5% every 4.5 s`);
  const ids = await submitAll(s, [c.key], "moving", STREAMS);
  await waitFor(`${STREAMS} jobs processing`, async () => (await db`SELECT count(*)::int AS n FROM video_jobs WHERE status = 'processing'`)[0]!.n === STREAMS);
  await Bun.sleep(2_000);
  log("10 s without streams");
  const before = await window(s.pid, 10_000);
  const port = Number(new URL(s.url).port);
  log(`opening ${STREAMS} streams`);
  const t0 = Date.now();
  const conns = ids.map((id) => openSse(port, c.key, id));
  await waitFor("every stream's first event", async () => conns.every((x) => x.firstAt !== null), 60_000);
  const openMs = Math.max(...conns.map((x) => x.firstAt!)) - t0;
  await Bun.sleep(2_000);
  const e0 = conns.reduce((n, x) => n + x.events, 0);
  log("10 s with streams");
  const during = await window(s.pid, 10_000);
  const events = conns.reduce((n, x) => n + x.events, 0) - e0;
  for (const x of conns) x.close();
  rows.push([`${STREAMS} progress streams: extra RSS of reelay (median of 10 s; max)`, `${(during.rss - before.rss).toFixed(1)} MB; ${(during.rssMax - before.rssMax).toFixed(1)} MB (${before.rss.toFixed(0)} → ${during.rss.toFixed(0)} MB)`, "≤ 50 MB"]);
  rows.push(["reelay CPU: 500 running jobs, without → with the streams", `${before.cpuPct.toFixed(1)}% → ${during.cpuPct.toFixed(1)}% of a core`, ""]);
  rows.push(["all streams open and each got its first event", `${openMs} ms`, ""]);
  rows.push(["progress events received in the 10 s window", `${events} (${(events / 10).toFixed(0)}/s)`, ""]);
});

if (serverErrors) rows.push(["submits answered 5xx (retried)", `${serverErrors}`, "0"]);

const w = [Math.max(...rows.map((r) => r[0].length)), Math.max(...rows.map((r) => r[1].length)), Math.max(...rows.map((r) => r[2].length), 6)];
console.log(`\n| ${"measure".padEnd(w[0]!)} | ${"result".padEnd(w[1]!)} | ${"target".padEnd(w[2]!)} |`);
console.log(`|${"-".repeat(w[0]! + 2)}|${"-".repeat(w[1]! + 2)}|${"-".repeat(w[2]! + 2)}|`);
for (const [a, b, t] of rows) console.log(`| ${a.padEnd(w[0]!)} | ${b.padEnd(w[1]!)} | ${t.padEnd(w[2]!)} |`);
