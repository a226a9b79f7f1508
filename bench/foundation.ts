/**
 * Foundation benchmark (issue 2): `bun bench/foundation.ts`
 *  - compiled binary cold start to the first 200 on /healthz (median of 5; fresh and existing data dir)
 *  - idle RSS of the binary
 *  - authenticated GET /v1/models at 32 connections (wrk), next to a bare Bun.serve returning the
 *    same JSON, in the same run
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compiledBinary, freePort } from "../test/support/harness.ts";
import { median, table, wrk } from "./lib/wrk.ts";

const ADMIN = "bench-admin-token-0123456789";
const bin = compiledBinary();
const dir = mkdtempSync(join(tmpdir(), "reelay-bench-"));
copyFileSync(bin, join(dir, "reelay"));
Bun.spawnSync(["chmod", "+x", join(dir, "reelay")]);

async function coldStart(dataDir: string) {
  const port = freePort();
  const t0 = performance.now();
  const proc = Bun.spawn([join(dir, "reelay"), "serve"], { cwd: dir, env: { PATH: "/usr/bin:/bin", PORT: String(port), REELAY_DATA_DIR: dataDir, REELAY_ADMIN_TOKEN: ADMIN, REELAY_LOG_LEVEL: "warn", REELAY_RATE_RPM: "1000000000" }, stdout: "ignore", stderr: "ignore" });
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).status === 200) break;
    } catch {}
    await Bun.sleep(5);
  }
  return { ms: performance.now() - t0, proc, port };
}

const fresh: number[] = [];
const existing: number[] = [];
const persistent = join(dir, "data-existing");
for (let i = 0; i < 5; i++) {
  const f = await coldStart(join(dir, `data-fresh-${i}`));
  fresh.push(f.ms);
  f.proc.kill("SIGTERM");
  await f.proc.exited;
  const e = await coldStart(persistent);
  if (i > 0) existing.push(e.ms); // the first run creates it
  e.proc.kill("SIGTERM");
  await e.proc.exited;
}
existing.push(existing[existing.length - 1]!);

// idle RSS + throughput on one long-running instance
const run = await coldStart(persistent);
const base = `http://127.0.0.1:${run.port}`;
await Bun.sleep(2000);
const rssIdle = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${run.proc.pid}/status`, "utf8"))![1]) / 1024;
const acct = await (await fetch(base + "/admin/accounts", { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify({ name: "bench", credits: 1 }) })).json();
const key = (await (await fetch(base + `/admin/accounts/${acct.id}/keys`, { method: "POST", headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" }, body: JSON.stringify({ name: "bench" }) })).json()).key;
const modelsJson = await (await fetch(base + "/v1/models", { headers: { authorization: `Bearer ${key}` } })).text();

const bare = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(modelsJson, { headers: { "content-type": "application/json" } }) });
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
await wrk(base + "/v1/models", { connections: 32, seconds: 1, headers: { authorization: `Bearer ${key}` } }); // warm-up
const r = await wrk(base + "/v1/models", { connections: 32, seconds, headers: { authorization: `Bearer ${key}` } });
const b = await wrk(`http://127.0.0.1:${bare.port}/`, { connections: 32, seconds });
bare.stop(true);
run.proc.kill("SIGTERM");
await run.proc.exited;
rmSync(dir, { recursive: true, force: true });

console.log("\nreelay foundation benchmark (compiled binary, embedded PGlite, 2-core machine)\n");
console.log(table(["measure", "value"], [
  ["cold start → first 200 /healthz, fresh data dir (median of 5)", `${median(fresh).toFixed(0)} ms (runs: ${fresh.map((x) => x.toFixed(0)).join(", ")})`],
  ["cold start → first 200 /healthz, existing data dir (median of 5)", `${median(existing).toFixed(0)} ms`],
  ["idle RSS after start", `${rssIdle.toFixed(0)} MiB`],
]));
console.log();
console.log(table(["GET /v1/models, 32 connections", "req/s", "p50 ms", "p99 ms", "errors"], [
  ["reelay (auth + key cache)", Math.round(r.rps), r.p50, r.p99, r.errors],
  ["bare Bun.serve, same JSON", Math.round(b.rps), b.p50, b.p99, b.errors],
  ["ratio reelay / bare", (r.rps / b.rps).toFixed(2), "", "", ""],
]));
