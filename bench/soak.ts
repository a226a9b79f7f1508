/**
 * The soak (issue 34): the compiled binary on PostgreSQL under steady mixed traffic for a long time,
 * sampled every 10 s — does anything grow with uptime?
 *
 *   bun bench/soak.ts [--minutes 30] [--rate 64] [--warmup 5] [--sample 10] [--video-every 15] [--postgres own|shared] [--out soak.png]
 *
 * PostgreSQL: by default a cluster of its own at the server's defaults (autovacuum on, as operators
 * run it; fsync off), made with initdb and deleted after; `--postgres shared` uses a database of its
 * own on DATABASE_URL's server instead (default postgres://postgres@127.0.0.1:5432/test; the test
 * cluster there runs with autovacuum off, which shows what vacuum would otherwise hide). The binary is dist/reelay (built by compile.sh if missing), or
 * --binary. Traffic, sampling and the end-of-run money check: test/lifecycle/soak-traffic.ts.
 *
 * Prints one row per minute (RSS, heap, fds, threads, DB connections, event-loop p99, p50/p99 of
 * each kind), the targets after the warm-up, the money check, and writes the series as a PNG chart
 * (--out; default in the scratch directory). Targets after the warm-up:
 *   RSS growth ≤ 5 % (median of the first minute after the warm-up vs of the last minute),
 *   file descriptors and database connections flat (last third's median ≤ first third's + 2),
 *   p99 of each kind within 20 % of its value in the first 5 minutes after the warm-up.
 * Exit code 1 when a target or the money check fails.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { compiledBinary, createTestDatabase, dropDatabase } from "../test/support/harness.ts";
import { startThrowawayPostgres } from "../test/support/throwaway-postgres.ts";
import { growth, KINDS, pctBetween, runSoak, type Kind, type Sample } from "../test/lifecycle/soak-traffic.ts";
import { arg } from "./lib/binaries.ts";
import { lineChartPng } from "./lib/line-chart.ts";
import { table } from "./lib/wrk.ts";

const MINUTES = Number(arg("minutes", "30"));
const RATE = Number(arg("rate", "64"));
const WARMUP_MIN = Number(arg("warmup", "5"));
const SAMPLE_S = Number(arg("sample", "10"));
const VIDEO_EVERY_S = Number(arg("video-every", "15"));
const dir = mkdtempSync(join(tmpdir(), "reelay-soak-"));
const OUT = resolve(arg("out", join(dir, "soak.png")));
const binary = arg("binary", "") || compiledBinary();

const own = arg("postgres", "own") === "own" ? await startThrowawayPostgres() : null;
const databaseUrl = own ? own.url : await createTestDatabase();
const autovacuum = (Bun.spawnSync(["psql", databaseUrl, "-Atc", "SHOW autovacuum"]).stdout.toString().trim() || "?");
console.log(`soak: ${MINUTES} min at ${RATE} ops/s + a preview video every ${VIDEO_EVERY_S} s; binary ${binary}; ${own ? "a PostgreSQL cluster of its own" : "a database on DATABASE_URL's server"} (autovacuum ${autovacuum}); scratch ${dir}`);
const r = await runSoak({
  binary,
  databaseUrl,
  dir,
  durationMs: MINUTES * 60_000,
  rate: RATE,
  sampleMs: SAMPLE_S * 1000,
  videoEveryMs: VIDEO_EVERY_S * 1000,
  onSample: (s) => {
    if (s.t % 60 < SAMPLE_S) console.log(`  ${(s.t / 60).toFixed(1)} min: rss ${s.rssMb.toFixed(0)} MB, heap ${s.heapMb.toFixed(0)} MB, fds ${s.fds}, conns ${s.dbConns}, chat p99 ${s.kinds.chat?.p99.toFixed(1)} ms, usage p50 ${s.kinds.usage?.p50.toFixed(1)} ms, holds dead ${s.holdsDead}`);
  },
}).finally(() => (own ? own.destroy() : dropDatabase(databaseUrl)));

// ---- per minute
const minutes = new Map<number, Sample[]>();
for (const s of r.samples) {
  const m = Math.ceil(s.t / 60);
  minutes.set(m, [...(minutes.get(m) ?? []), s]);
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const SHOWN: Kind[] = ["chat", "stream", "embeddings", "responses", "usage", "console"];
console.log("\n" + table(
  ["min", "RSS MB", "heap MB", "fds", "threads", "DB conns", "loop p99 ms", "holds live/dead", ...SHOWN.map((k) => `${k} p50/p99`), "errors"],
  [...minutes].map(([m, ss]) => [
    m,
    Math.max(...ss.map((s) => s.rssMb)).toFixed(0),
    med(ss.map((s) => s.heapMb)).toFixed(0),
    Math.max(...ss.map((s) => s.fds)),
    Math.max(...ss.map((s) => s.threads)),
    Math.max(...ss.map((s) => s.dbConns)),
    Math.max(...ss.map((s) => s.loopP99Ms)).toFixed(1),
    `${ss.at(-1)!.holdsLive}/${ss.at(-1)!.holdsDead}`,
    ...SHOWN.map((k) => `${pctBetween(r, k, (m - 1) * 60, m * 60, 50).toFixed(1)}/${pctBetween(r, k, (m - 1) * 60, m * 60, 99).toFixed(1)}`),
    ss.reduce((n, s) => n + Object.values(s.kinds).reduce((e, w) => e + (w?.errors ?? 0), 0), 0),
  ]),
));

// ---- targets
const warm = WARMUP_MIN * 60;
const after = r.samples.filter((s) => s.t > warm);
const endS = MINUTES * 60;
const checks: Array<[string, string, boolean]> = [];
if (after.length >= 6) {
  const first = med(after.filter((s) => s.t <= warm + 60).map((s) => s.rssMb));
  const last = med(after.filter((s) => s.t > endS - 60).map((s) => s.rssMb));
  checks.push(["RSS growth after warm-up ≤ 5 %", `${first.toFixed(0)} → ${last.toFixed(0)} MB (${(((last - first) / first) * 100).toFixed(1)} %)`, last <= first * 1.05]);
  for (const [name, key] of [["file descriptors", "fds"], ["DB connections", "dbConns"], ["threads", "threads"]] as const) {
    const g = growth(after.map((s) => s[key]));
    checks.push([`${name} flat`, `${g.first} → ${g.last} (medians of first and last third)`, g.last <= g.first + 2]);
  }
  const refTo = Math.min(endS, warm + 300);
  for (const k of KINDS) {
    const ref = pctBetween(r, k, warm, refTo, 99);
    const end = pctBetween(r, k, Math.max(refTo, endS - 300), endS, 99); // the last 5 minutes after the reference
    if (ref === 0 || end === 0) continue;
    checks.push([`${k} p99 within 20 %`, `${ref.toFixed(1)} → ${end.toFixed(1)} ms (${(((end - ref) / ref) * 100).toFixed(0)} %)`, end <= ref * 1.2]);
  }
  const u50 = [pctBetween(r, "usage", warm, refTo, 50), pctBetween(r, "usage", Math.max(refTo, endS - 300), endS, 50)];
  checks.push(["usage p50 (for the record)", `${u50[0]!.toFixed(1)} → ${u50[1]!.toFixed(1)} ms`, true]);
} else checks.push(["targets", `need ≥ 1 minute after the ${WARMUP_MIN}-minute warm-up`, false]);
const errors = Object.values(r.totals).reduce((n, t) => n + t.errors, 0);
checks.push(["client errors", String(errors), errors === 0]);
checks.push(["SIGTERM exit code", String(r.exitCode), r.exitCode === 0]);
checks.push(["ledger == balance, nothing held", r.ledgerMismatches.length === 0 ? "every account" : r.ledgerMismatches.join("; "), r.ledgerMismatches.length === 0]);
checks.push(["one usage row per billable answer", `${r.usageRows} rows; missing ${r.missingUsage.length}, unexplained ${r.extraUsage.length}`, r.missingUsage.length === 0 && r.extraUsage.length === 0]);
checks.push(["server error log lines", String(r.errorLogs.length), r.errorLogs.length === 0]);
console.log("\n" + table(["check", "value", "ok"], checks.map(([a, b, ok]) => [a, b, ok ? "yes" : "NO"])));
const ops = Object.entries(r.totals).map(([k, t]) => `${k} ${t.n}${t.aborted ? ` (${t.aborted} aborted)` : ""}`).join(", ");
console.log(`\noperations: ${ops}; videos completed ${r.videosCompleted}, webhooks received ${r.webhooks}`);
console.log(`holds table at the end: ${r.holds.live} live, ${r.holds.dead} dead row versions; ${r.holds.updates} updates of which ${r.holds.hotUpdates} HOT (${((r.holds.hotUpdates / Math.max(1, r.holds.updates)) * 100).toFixed(0)} %); autovacuum ran ${r.holds.autovacuums} times`);
if (r.errorLogs.length) console.log("server errors:\n" + r.errorLogs.slice(0, 5).join("\n"));
if (r.missingUsage.length + r.extraUsage.length) console.log(`usage rows missing for: ${r.missingUsage.slice(0, 10).join(", ")}\nusage rows no answer explains: ${r.extraUsage.slice(0, 10).join("\n")}`);
if (r.errors.length) console.log(`client errors (first 10):\n${r.errors.slice(0, 10).join("\n")}`);

// ---- chart
const min = (s: Sample) => s.t / 60;
const perKind = (stat: "p50" | "p99", kinds: Kind[]) => kinds.map((k) => ({ name: k, points: r.samples.filter((s) => s.kinds[k]).map((s) => [min(s), s.kinds[k]![stat]] as [number, number]) }));
const png = lineChartPng([
  { title: "RSS and JS heap, MB", series: [{ name: "rss", points: r.samples.map((s) => [min(s), s.rssMb]) }, { name: "heap", points: r.samples.map((s) => [min(s), s.heapMb]) }] },
  { title: "open fds, threads, DB connections", series: [{ name: "fds", points: r.samples.map((s) => [min(s), s.fds]) }, { name: "threads", points: r.samples.map((s) => [min(s), s.threads]) }, { name: "db conns", points: r.samples.map((s) => [min(s), s.dbConns]) }] },
  { title: "event loop delay p99, ms", series: [{ name: "loop p99", points: r.samples.map((s) => [min(s), s.loopP99Ms]) }] },
  { title: "p99 per 10 s, ms", series: perKind("p99", ["chat", "stream", "responses", "usage", "console"]) },
  { title: "p50 per 10 s, ms", series: perKind("p50", ["chat", "embeddings", "responses", "usage", "console"]) },
  { title: "holds table: dead row versions", series: [{ name: "dead", points: r.samples.map((s) => [min(s), s.holdsDead]) }, { name: "live", points: r.samples.map((s) => [min(s), s.holdsLive]) }] },
], "minutes");
writeFileSync(OUT, png);
writeFileSync(OUT.replace(/\.png$/, "") + ".json", JSON.stringify({ minutes: MINUTES, rate: RATE, autovacuum, binary, samples: r.samples, totals: r.totals, checks, holds: r.holds }, null, 1));
console.log(`\nchart: ${OUT}`);
if (!arg("out", "")) console.log(`(the scratch directory ${dir} is kept for the chart; the server log is server.log there)`);
else rmSync(dir, { recursive: true, force: true });
process.exit(checks.every(([, , ok]) => ok) ? 0 : 1);
