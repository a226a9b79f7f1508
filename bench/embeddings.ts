/**
 * Embeddings throughput through reelay over HTTP, next to the model called in process, in one run.
 *
 *   bun bench/embeddings.ts [secondsPerPhase=6] [batchWindowMs=3]
 *
 * The server is a child process (`bun src/main.ts serve`, real Postgres in a fresh database, the
 * built-in use-lite model on the wasm backend), so its peak RSS is its own (VmHWM). Phases:
 *   (a) HTTP, 4 concurrent clients, each request 32 sentences
 *   (b) HTTP, 64 concurrent clients, each request 1 sentence (the server's micro-batcher groups them)
 *   (c) in process, no HTTP: one embed() call per 32 sentences, sequential; and 64 concurrent
 *       single-sentence callers through the plugin's MicroBatcher (same window/size as the plugin)
 * Requests ask for base64 (the openai SDK's default) so the client spends little CPU decoding.
 * Client and server share the machine's 2 cores, as they would in a one-box deployment test.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { loadUseLiteEncoder, MicroBatcher } from "../plugins/local-embeddings/index.ts";
import { ADMIN_TOKEN, createTestDatabase, dropDatabase } from "../test/support/harness.ts";

const seconds = Number(process.argv[2] ?? 6);
/** the server's micro-batching window (plugin option batchWindowMs; the plugin's default is 3) */
const windowMs = Number(process.argv[3] ?? 3);
const modelsFile = join(mkdtempSync(join(tmpdir(), "reelay-bench-")), "models.json");
writeFileSync(modelsFile, JSON.stringify({ builtins: false, models: [{ id: "use-lite", plugin: "local-embeddings", pricing: { inputPerMillion: 20_000 }, options: { batchWindowMs: windowMs, maxBatchSize: 64 } }] }));

const subjects = ["The committee", "My neighbour", "A small startup", "The old library", "Our support team", "The river", "This new phone", "The orchestra"];
const verbs = ["announced", "repaired", "questioned", "celebrated", "ignored", "described", "postponed", "improved"];
const objects = ["the quarterly budget", "a broken bicycle", "the long-awaited update", "the winter festival", "an unusual request", "the rainy weather", "its battery life", "the evening concert"];
let counter = 0;
const sentence = () => { const i = counter++; return `${subjects[i % 8]} ${verbs[(i >> 3) % 8]} ${objects[(i >> 6) % 8]} on day ${i}.`; };
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

interface Row { phase: string; sentences: number; requests: number; seconds: number; latencies: number[] }

/** `workers` loops, each doing `call(size)` until the deadline; latency per call */
async function drive(phase: string, workers: number, size: number, call: (texts: string[]) => Promise<void>): Promise<Row> {
  const latencies: number[] = [];
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(Array.from({ length: workers }, async () => {
    while (performance.now() < deadline) {
      const texts = Array.from({ length: size }, sentence);
      const t0 = performance.now();
      await call(texts);
      latencies.push(performance.now() - t0);
    }
  }));
  const elapsed = (performance.now() - started) / 1000;
  return { phase, sentences: latencies.length * size, requests: latencies.length, seconds: elapsed, latencies: latencies.sort((a, b) => a - b) };
}

// ------------------------------------------------------------------ server
const databaseUrl = await createTestDatabase();
const port = 20_000 + Math.floor(Math.random() * 20_000);
const base = `http://127.0.0.1:${port}`;
const server = Bun.spawn(["bun", "src/main.ts", "serve"], {
  cwd: new URL("..", import.meta.url).pathname,
  env: { ...process.env, DATABASE_URL: databaseUrl, PORT: String(port), HOST: "127.0.0.1", REELAY_ADMIN_TOKEN: ADMIN_TOKEN, REELAY_LOG_LEVEL: "error", REELAY_RATE_RPM: "0", REELAY_RATE_TPM: "0", REELAY_PLUGINS_DIR: "/nonexistent-reelay-plugins", REELAY_MODELS_FILE: modelsFile },
  stdout: "inherit",
  stderr: "inherit",
});
const peakRssMb = () => {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
};

try {
  const bootStart = performance.now();
  while (true) {
    const ok = await fetch(`${base}/readyz`).then((r) => r.ok, () => false);
    if (ok) break;
    if (performance.now() - bootStart > 120_000) throw new Error("server did not become ready in 120 s");
    await Bun.sleep(100);
  }
  const bootMs = performance.now() - bootStart;
  const admin = (path: string, body: unknown) => fetch(base + path, { method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify(body) }).then((r) => r.json() as any);
  const account = await admin("/admin/accounts", { name: "bench", credits: 1_000_000_000_000 });
  const { key } = await admin(`/admin/accounts/${account.id}/keys`, { name: "bench" });

  const embedHttp = async (texts: string[]) => {
    const res = await fetch(`${base}/v1/embeddings`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "use-lite", input: texts, encoding_format: "base64" }),
    });
    const json = (await res.json()) as any;
    if (res.status !== 200 || json.data.length !== texts.length) throw new Error(`HTTP ${res.status}: ${JSON.stringify(json).slice(0, 200)}`);
  };
  for (let i = 0; i < 3; i++) await embedHttp([sentence(), sentence()]); // kernels compiled, connections open

  const rows: Row[] = [];
  const load0 = loadavg()[0]!;
  rows.push(await drive("(a) HTTP, 32 sentences/request, 4 concurrent", 4, 32, embedHttp));
  rows.push(await drive("(b) HTTP, 1 sentence/request, 64 concurrent", 64, 1, embedHttp));
  const serverPeak = peakRssMb();

  // ---------------------------------------------------------- in process
  const encoder = await loadUseLiteEncoder({ backend: "wasm" });
  await encoder.embed([sentence()]);
  rows.push(await drive("(c1) in process, embed(32), sequential", 1, 32, async (t) => { await encoder.embed(t); }));
  const batcher = new MicroBatcher<number[], Float32Array>((batch) => encoder.embedTokens(batch), { windowMs, maxBatchSize: 64 });
  rows.push(await drive("(c2) in process, MicroBatcher, 64 concurrent singles", 64, 1, async (t) => { await batcher.submit(t.map((x) => encoder.tokenizer.encode(x))); }));
  batcher.close();
  encoder.dispose();

  const header = ["phase", "requests", "sentences/s", "p50 ms", "p99 ms"];
  const table = rows.map((r) => [r.phase, String(r.requests), (r.sentences / r.seconds).toFixed(0), percentile(r.latencies, 50).toFixed(1), percentile(r.latencies, 99).toFixed(1)]);
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  const rate = (i: number) => rows[i]!.sentences / rows[i]!.seconds;
  console.log(`USE-lite (wasm), ~${seconds}s per phase, batch window ${windowMs} ms, server boot ${bootMs.toFixed(0)} ms, load average ${load0.toFixed(2)} → ${loadavg()[0]!.toFixed(2)} (2 cores)`);
  console.log(line(header));
  for (const r of table) console.log(line(r));
  console.log(`ratio (b)/(c2) HTTP singles vs in-process singles: ${(rate(1) / rate(3)).toFixed(2)}; (b)/(c1): ${(rate(1) / rate(2)).toFixed(2)}; (a)/(c1): ${(rate(0) / rate(2)).toFixed(2)}`);
  console.log(`server peak RSS ${serverPeak.toFixed(0)} MB; bench process peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
} finally {
  server.kill("SIGTERM");
  await server.exited;
  await dropDatabase(databaseUrl);
}
