/**
 * Upstream routing (issue 19), one command:  bun bench/upstream-routing.ts
 *
 * 1. Router overhead per request, in process: UpstreamRouter.acquire + release (the pure choice:
 *    weights, least outstanding, breaker bookkeeping), and routedCall around an attempt that does
 *    nothing (the whole per-request cost the plugin adds), with 1 and with 8 deployments.
 * 2. Failover, end to end: reelay (`bun src/main.ts serve`, real Postgres, billing, logs) serving a
 *    model over three fake OpenAI upstreams, under an open-loop load of BENCH_RATE requests a second
 *    (default 500). After 2 s one deployment fails hard, in one of two ways:
 *      - reset: its process is replaced by a socket that resets every connection (and the requests
 *        in flight on it are cut);
 *      - 503: it answers every request HTTP 503.
 *    Measured: how long until traffic leaves it (the last attempt it receives, ms after the failure
 *    began), when its circuit opens (GET /admin/upstreams polled every 5 ms), and how many answers
 *    the clients saw that were not 200.
 * Targets: overhead ≤ 20 µs; ≤ 1 % client-visible errors while one of three deployments fails hard.
 * Env: BENCH_RATE (default 500), BENCH_SECONDS (default 6) per failover run.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type Server as NetServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { routedCall, UpstreamRouter, type CallOptions } from "../packages/plugin-sdk/src/index.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../test/fakes/openai-upstream.ts";
import { createTestDatabase, dropDatabase, freePort } from "../test/support/harness.ts";
import { table } from "./lib/wrk.ts";

const ROOT = join(import.meta.dir, "..");
const ADMIN = "bench-admin-token-0123456789";
const RATE = Number(process.env.BENCH_RATE ?? 500);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const FAIL_AT_MS = 2_000;

/* ------------------------------------------------------------ 1. overhead */

async function overhead(deployments: number) {
  const specs = Array.from({ length: deployments }, (_, i) => ({ name: `d${i}`, weight: 1 + (i % 3), target: i }));
  const router = new UpstreamRouter(specs);
  const n = 1_000_000;
  for (let i = 0; i < 100_000; i++) router.release(router.acquire()!, { ok: true, ms: 1 }); // warm-up
  let t = performance.now();
  for (let i = 0; i < n; i++) router.release(router.acquire()!, { ok: true, ms: 1 });
  const pure = ((performance.now() - t) * 1000) / n;

  const call: Pick<CallOptions, "signal" | "routed"> = { signal: new AbortController().signal, routed: () => {} };
  const attempt = async () => 1;
  const m = 300_000;
  for (let i = 0; i < 30_000; i++) await routedCall(router, call, attempt);
  t = performance.now();
  for (let i = 0; i < m; i++) await routedCall(router, call, attempt);
  const routed = ((performance.now() - t) * 1000) / m;
  return { pure, routed };
}

/* ------------------------------------------------------------ 2. failover */

interface Reelay { url: string; stop(): Promise<void> }

async function spawnReelay(env: Record<string, string>): Promise<Reelay> {
  const port = freePort();
  const proc = Bun.spawn(["bun", "src/main.ts", "serve"], {
    cwd: ROOT, stdout: "ignore", stderr: "inherit",
    env: {
      ...process.env, PORT: String(port), HOST: "127.0.0.1", REELAY_ADMIN_TOKEN: ADMIN, REELAY_LOG_LEVEL: "warn", REELAY_LOG_FORMAT: "json",
      REELAY_PLUGINS_DIR: "/nonexistent", REELAY_RATE_RPM: "1000000000", REELAY_RATE_TPM: "1000000000000", ...env,
    },
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (await fetch(url + "/readyz").then((r) => r.status === 200, () => false)) break;
    if (i > 600 || proc.exitCode !== null) throw new Error("reelay did not come up");
    await Bun.sleep(50);
  }
  return { url, stop: async () => void (proc.kill("SIGTERM"), await proc.exited) };
}

async function newKey(url: string): Promise<string> {
  const headers = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
  const acct = (await (await fetch(url + "/admin/accounts", { method: "POST", headers, body: JSON.stringify({ name: "bench", credits: 1_000_000_000_000 }) })).json()) as { id: string };
  return ((await (await fetch(url + `/admin/accounts/${acct.id}/keys`, { method: "POST", headers, body: '{"name":"bench"}' })).json()) as { key: string }).key;
}

/** A socket on `port` that resets every connection at once, noting when each arrived. */
function resettingSocket(port: number, arrivals: number[]): Promise<NetServer> {
  const server = createServer((sock: Socket) => {
    arrivals.push(performance.now());
    sock.resetAndDestroy();
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

async function failover(mode: "reset" | "503", databaseUrl: string) {
  const fakes = await Promise.all([0, 1, 2].map(() => startFakeOpenAI({ tokens: 8 })));
  const victim = fakes[1]!;
  const file = join(mkdtempSync(join(tmpdir(), "reelay-bench-routing-")), "models.json");
  writeFileSync(file, JSON.stringify({
    builtins: false,
    models: [{
      id: "bench-chat", plugin: "openai-compatible", pricing: { inputPerMillion: 1_000_000, outputPerMillion: 2_000_000 }, maxOutputTokens: 16,
      options: { deployments: fakes.map((f, i) => ({ name: `d${i}`, baseUrl: f.url })) },
    }],
  }));
  const reelay = await spawnReelay({ DATABASE_URL: databaseUrl, REELAY_MODELS_FILE: file });
  const key = await newKey(reelay.url);
  const body = JSON.stringify({ model: "bench-chat", messages: [{ role: "user", content: "Count to eight." }], max_tokens: 8 });
  const send = () => fetch(reelay.url + "/v1/chat/completions", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body })
    .then(async (r) => (await r.arrayBuffer(), r.status), () => 0);
  for (let i = 0; i < 50; i++) await send(); // warm: connections, the key cache, the token counter

  const statuses: number[] = [];
  const pending: Promise<void>[] = [];
  const arrivals: number[] = [];
  let resetter: NetServer | null = null;
  let failedAt = 0;
  let openAt: number | null = null;
  const start = performance.now();
  const interval = 1000 / RATE;
  let sent = 0;
  let watching = true;
  const watch = (async () => {
    while (watching) {
      if (failedAt && openAt === null) {
        const v = (await (await fetch(reelay.url + "/admin/upstreams", { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as any;
        const d1 = v.data[0].deployments.find((d: any) => d.name === "d1");
        if (d1.state === "open") openAt = performance.now();
      }
      await Bun.sleep(5);
    }
  })();
  while (performance.now() - start < SECONDS * 1000) {
    const now = performance.now() - start;
    if (!failedAt && now >= FAIL_AT_MS) {
      failedAt = performance.now();
      if (mode === "503") victim.behave({ status: 503 });
      else {
        await victim.stop(); // cuts the requests in flight on it
        resetter = await resettingSocket(victim.port, arrivals);
      }
    }
    // open loop: every request due by now is sent, whatever the answers are doing
    while (sent < (now / 1000) * RATE) {
      sent++;
      pending.push(send().then((s) => void statuses.push(s)));
    }
    await Bun.sleep(Math.max(0, interval / 2));
  }
  await Promise.all(pending);
  watching = false;
  await watch;
  const attemptsAfter = mode === "503" ? victim.requests.filter((r) => r.receivedAt >= failedAt).map((r) => r.receivedAt) : arrivals;
  const lastAttempt = attemptsAfter.length ? Math.max(...attemptsAfter) - failedAt : 0;
  const errors = statuses.filter((s) => s !== 200).length;
  await reelay.stop();
  resetter?.close();
  await Promise.all(fakes.filter((f) => f !== victim || mode === "503").map((f: FakeOpenAI) => f.stop()));
  return { mode, requests: statuses.length, errors, attemptsOnFailed: attemptsAfter.length, lastAttempt, openAfter: openAt === null ? null : openAt - failedAt };
}

/* ---------------------------------------------------------------- report */

const o1 = await overhead(1);
const o8 = await overhead(8);
console.log("\nRouter overhead per request (in process, µs)");
console.log(table(["measure", "1 deployment", "8 deployments", "target"], [
  ["acquire + release (choice and breaker)", o1.pure, o8.pure, "≤ 20"],
  ["routedCall around a no-op attempt", o1.routed, o8.routed, "≤ 20"],
]));

const databaseUrl = await createTestDatabase();
const rows: Array<Array<string | number>> = [];
try {
  for (const mode of ["reset", "503"] as const) {
    const r = await failover(mode, databaseUrl);
    rows.push([
      mode === "reset" ? "connections reset" : "HTTP 503 on every request", r.requests, r.errors, `${((100 * r.errors) / r.requests).toFixed(2)} %`,
      r.attemptsOnFailed, Math.round(r.lastAttempt), r.openAfter === null ? "not seen" : Math.round(r.openAfter),
    ]);
  }
} finally {
  await dropDatabase(databaseUrl);
}
console.log(`\nOne of three deployments fails hard ${FAIL_AT_MS / 1000} s into ${SECONDS} s at ${RATE} req/s (open loop; breaker defaults: 5 failures in a row, 5 s cooldown)`);
console.log(table(["failure", "requests", "client errors", "error rate (target ≤ 1 %)", "attempts on it after", "traffic left after ms", "circuit open after ms"], rows));
process.exit(0);
