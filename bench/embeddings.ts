/**
 * Local embeddings: the in-process ceiling next to what reelay delivers over HTTP, in one run.
 *
 *   bun bench/embeddings.ts [--seconds 8] [--window 3] [--batch 32] [--batch-tokens 2048] [--pglite] [--source]
 *
 * 1. Ceiling: the model with nothing around it — two inference workers (the plugin's pool, one per
 *    core) each kept busy with pre-tokenized batches of the bench sentences, no HTTP, no billing,
 *    no tokenizer. Best of batch 32 and 64.
 * 2. Through reelay: the compiled binary (`--source`: `bun src/main.ts`) with the model preloaded,
 *    billing on PostgreSQL (`--pglite`: the embedded default), clients in this process:
 *    (a) 4 concurrent requests of 32 sentences, (b) 64 concurrent requests of 1 sentence.
 * Requests ask for base64 vectors (the openai SDK's default) so the client spends little CPU on
 * JSON. Clients, server and Postgres share the machine's cores, as in a one-box deployment.
 * Sentences/s and tokens/s are reported; tokens are the model's own (SentencePiece) tokens.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { loadVocabularySync } from "../plugins/local-embeddings/vocabulary.ts";
import { SentencePieceTokenizer } from "../plugins/local-embeddings/tokenizer.ts";
import { InferencePool } from "../plugins/local-embeddings/worker-pool.ts";
import { arg } from "./lib/binaries.ts";
import { ADMIN_TOKEN, compiledBinary, createTestDatabase, dropDatabase, freePort } from "../test/support/harness.ts";

const seconds = Number(arg("seconds", "8"));
const windowMs = Number(arg("window", "3"));
const maxBatchSize = Number(arg("batch", "32"));
const maxBatchTokens = Number(arg("batch-tokens", "2048"));
const pglite = process.argv.includes("--pglite");
const fromSource = process.argv.includes("--source");

const subjects = ["The committee", "My neighbour", "A small startup", "The old library", "Our support team", "The river", "This new phone", "The orchestra"];
const verbs = ["announced", "repaired", "questioned", "celebrated", "ignored", "described", "postponed", "improved"];
const objects = ["the quarterly budget", "a broken bicycle", "the long-awaited update", "the winter festival", "an unusual request", "the rainy weather", "its battery life", "the evening concert"];
let counter = 0;
const sentence = () => { const i = counter++; return `${subjects[i % 8]} ${verbs[(i >> 3) % 8]} ${objects[(i >> 6) % 8]} on day ${i}.`; };
const tokenizer = new SentencePieceTokenizer(loadVocabularySync());
const tokensOf = (texts: string[]) => texts.reduce((n, t) => n + tokenizer.encode(t).length, 0);
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

interface Row { phase: string; sentences: number; tokens: number; seconds: number; latencies: number[]; errors: number }

/** `loops` concurrent loops, each doing `call(size sentences)` until the deadline */
async function drive(phase: string, loops: number, size: number, call: (texts: string[]) => Promise<boolean>): Promise<Row> {
  const latencies: number[] = [];
  let tokens = 0, sentences = 0, errors = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(Array.from({ length: loops }, async () => {
    while (performance.now() < deadline) {
      const texts = Array.from({ length: size }, sentence);
      const t0 = performance.now();
      if (await call(texts)) {
        latencies.push(performance.now() - t0);
        sentences += size;
        tokens += tokensOf(texts);
      } else errors++;
    }
  }));
  return { phase, sentences, tokens, seconds: (performance.now() - started) / 1000, latencies: latencies.sort((a, b) => a - b), errors };
}

const load0 = loadavg()[0]!;
const rows: Row[] = [];

// ------------------------------------------------------------------ 1. ceiling
{
  const pool = await InferencePool.start(2, { backend: "wasm", warmUp: Array.from({ length: 32 }, () => tokenizer.encode(sentence())) });
  for (const size of [32, 64]) {
    rows.push(await drive(`ceiling: model only, 2 workers busy, batch ${size}`, 2, size, async (texts) => {
      await pool.embed(texts.map((t) => tokenizer.encode(t)));
      return true;
    }));
  }
  pool.close();
}
const ceiling = rows.reduce((best, r) => (r.sentences / r.seconds > best.sentences / best.seconds ? r : best));

// ------------------------------------------------------------------ 2. through reelay
const dir = mkdtempSync(join(tmpdir(), "reelay-bench-emb-"));
const modelsFile = join(dir, "models.json");
writeFileSync(modelsFile, JSON.stringify({ builtins: false, models: [{ id: "use-lite", plugin: "local-embeddings", pricing: { inputPerMillion: 20_000 }, options: { batchWindowMs: windowMs, maxBatchSize, maxBatchTokens } }] }));
const databaseUrl = pglite ? null : await createTestDatabase();
const port = freePort();
const base = `http://127.0.0.1:${port}`;
const command = fromSource ? ["bun", "src/main.ts", "serve"] : [compiledBinary(), "serve"];
const server = Bun.spawn(command, {
  cwd: new URL("..", import.meta.url).pathname,
  env: {
    PATH: process.env.PATH, PORT: String(port), HOST: "127.0.0.1", REELAY_ADMIN_TOKEN: ADMIN_TOKEN, REELAY_LOG_LEVEL: "error", REELAY_LOG_FORMAT: "json",
    REELAY_RATE_RPM: "0", REELAY_RATE_TPM: "0", REELAY_PLUGINS_DIR: join(dir, "no-plugins"), REELAY_MODELS_FILE: modelsFile,
    REELAY_PRELOAD_MODELS: "use-lite", REELAY_DATA_DIR: join(dir, "data"), ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  },
  stdout: "inherit",
  stderr: "inherit",
});
const rssMb = (field: "VmRSS" | "VmHWM") => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${server.pid}/status`, "utf8"))?.[1] ?? NaN) / 1024;
let idleRss = NaN, peakRss = NaN;
try {
  for (const end = Date.now() + 120_000; ; await Bun.sleep(50)) {
    const r = await fetch(`${base}/readyz`).then((x) => x.json() as Promise<any>, () => null);
    if (r?.models?.find((m: any) => m.id === "use-lite")?.state === "ready") break;
    if (Date.now() > end) throw new Error("use-lite not ready in 120 s");
  }
  idleRss = rssMb("VmRSS");
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
    if (res.status !== 200 || json.data.length !== texts.length) {
      console.error(`HTTP ${res.status}: ${JSON.stringify(json).slice(0, 200)}`);
      return false;
    }
    return true;
  };
  for (let i = 0; i < 5; i++) await embedHttp([sentence(), sentence()]); // connections open, key cached
  rows.push(await drive("reelay: 4 concurrent requests × 32 sentences", 4, 32, embedHttp));
  rows.push(await drive("reelay: 64 concurrent requests × 1 sentence", 64, 1, embedHttp));
  peakRss = rssMb("VmHWM");
} finally {
  server.kill("SIGTERM");
  await server.exited;
  if (databaseUrl) await dropDatabase(databaseUrl);
  rmSync(dir, { recursive: true, force: true });
}

const rate = (r: Row) => r.sentences / r.seconds;
const header = ["phase", "sentences/s", "tokens/s", "of ceiling", "p50 ms", "p99 ms", "errors"];
const table = rows.map((r) => [r.phase, rate(r).toFixed(0), (r.tokens / r.seconds).toFixed(0), r === ceiling ? "ceiling" : `${((100 * rate(r)) / rate(ceiling)).toFixed(0)}%`, percentile(r.latencies, 50).toFixed(1), percentile(r.latencies, 99).toFixed(1), String(r.errors)]);
const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)));
const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
console.log(`\nUSE-lite (wasm SIMD), ${cpus().length} cores, ${seconds} s per phase; server: ${fromSource ? "bun src/main.ts" : "compiled binary"}, billing on ${pglite ? "PGlite" : "PostgreSQL"}, window ${windowMs} ms, batch ≤ ${maxBatchSize} sentences / ${maxBatchTokens} padded tokens; load average ${load0.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}`);
console.log(line(header));
for (const r of table) console.log(line(r));
console.log(`server RSS: ${idleRss.toFixed(0)} MB with the model loaded and idle, ${peakRss.toFixed(0)} MB peak; targets: ≥ 90% of the ceiling and ≥ 200 sentences/s`);
