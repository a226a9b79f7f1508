/**
 * Local chat (issue 22): `bun bench/local-llm.ts [--stub-billing]`
 *
 * The embedded stories260K decoding on one thread per step, measured two ways in one run, rounds
 * alternating so both see the same machine:
 *  - direct: node-llama-cpp in this process (context with 4 sequences, the same sampling reelay uses,
 *    each token detokenized), no HTTP;
 *  - reelay: `bun src/main.ts serve` in a child process (real Postgres: auth, hold, settle, usage row),
 *    streamed POST /v1/chat/completions read by this process, tokens counted from the usage chunk.
 * Rows: tokens/s for 1 stream and for 4 concurrent streams (aggregate), CPU time per 1,000 tokens
 * (this process for direct, the server process for reelay: the figure least disturbed by other load
 * on the machine), and time to first token (request start → first content token) of a 1-token answer.
 * --stub-billing: the server runs with bench/lib/stub-billing.ts preloaded (hold/settle/release in
 * memory), to show how much of the first-token time is the money path's database round trips.
 * Env: BENCH_ROUNDS (default 5) throughput rounds, BENCH_TTFT_SAMPLES (default 40), BENCH_TOKENS (default 256).
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createParser } from "eventsource-parser";
import { getLlama, LlamaLogLevel, type LlamaContextSequence, type LlamaModel } from "node-llama-cpp";
import { embeddedModelPath } from "../plugins/local-llm/embedded-model.ts";
import { createTestDatabase, dropDatabase, freePort } from "../test/support/harness.ts";
import { median, table } from "./lib/wrk.ts";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const TTFT_SAMPLES = Number(process.env.BENCH_TTFT_SAMPLES ?? 40);
const TOKENS = Number(process.env.BENCH_TOKENS ?? 256);
const PROMPT = "Once upon a time";
const ADMIN = "bench-admin-token-0123456789";
const stubBilling = process.argv.includes("--stub-billing");

interface Run { tokens: number; ms: number; ttftMs: number }

/** CPU ms (user + system, all threads) of a process: /proc/<pid>/stat fields 14 and 15, in clock ticks of 10 ms */
function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

// ---------------------------------------------------------------- direct
const llama = await getLlama({ gpu: false, build: "never", skipDownload: true, logLevel: LlamaLogLevel.error, logger: () => {} });
const model: LlamaModel = await llama.loadModel({ modelPath: embeddedModelPath });
const context = await model.createContext({ contextSize: 512, sequences: 4, threads: 1 });
const sequences: LlamaContextSequence[] = Array.from({ length: 4 }, () => context.getSequence());
const promptTokens = [model.tokens.bos!, ...model.tokenize(PROMPT)];

async function direct(sequence: LlamaContextSequence, maxTokens: number, seed: number): Promise<Run> {
  await sequence.clearHistory(); // reelay clears a sequence when a request returns it, before the next one starts
  const t0 = performance.now();
  let ttftMs = 0;
  let tokens = 0;
  let text = "";
  for await (const token of sequence.evaluate(promptTokens, { temperature: 1, topP: 1, topK: 0, minP: 0, seed, yieldEogToken: true })) {
    if (tokens === 0) ttftMs = performance.now() - t0;
    tokens++;
    if (model.isEogToken(token) || tokens >= maxTokens) break;
    text += model.detokenize([token]);
  }
  return { tokens, ms: performance.now() - t0, ttftMs };
}

// ---------------------------------------------------------------- reelay
const port = freePort();
const url = `http://127.0.0.1:${port}`;
const dir = mkdtempSync(join(tmpdir(), "reelay-llm-bench-"));
const modelsFile = join(dir, "models.json");
writeFileSync(modelsFile, JSON.stringify({ builtins: false, models: [{
  id: "bench-story", plugin: "local-llm", options: { contextSize: 512, parallel: 4, maxQueue: 8, threads: 1 },
  pricing: { inputPerMillion: 10_000, outputPerMillion: 20_000 }, maxOutputTokens: TOKENS,
}] }));
const databaseUrl = await createTestDatabase();
const server = Bun.spawn(["bun", ...(stubBilling ? ["--preload", "./bench/lib/stub-billing.ts"] : []), "src/main.ts", "serve"], {
  cwd: join(import.meta.dir, ".."), stdout: "ignore", stderr: "inherit",
  env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", DATABASE_URL: databaseUrl, REELAY_MODELS_FILE: modelsFile, REELAY_ADMIN_TOKEN: ADMIN, REELAY_LOG_LEVEL: "warn", REELAY_LOG_FORMAT: "json", REELAY_RATE_RPM: "0", REELAY_RATE_TPM: "0", REELAY_PLUGINS_DIR: "/nonexistent" },
});

async function viaReelay(key: string, maxTokens: number, seed: number): Promise<Run> {
  const t0 = performance.now();
  const res = await fetch(url + "/v1/chat/completions", {
    method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "bench-story", messages: [{ role: "user", content: PROMPT }], max_tokens: maxTokens, seed, stream: true, stream_options: { include_usage: true } }),
  });
  if (res.status !== 200) throw new Error(`reelay answered ${res.status}: ${await res.text()}`);
  let ttftMs = 0;
  let tokens = -1;
  const parser = createParser({
    onEvent: (e) => {
      if (e.data === "[DONE]") return;
      const chunk = JSON.parse(e.data);
      if (!ttftMs && chunk.choices[0]?.delta?.content) ttftMs = performance.now() - t0;
      if (chunk.choices.length === 0) tokens = chunk.usage.completion_tokens;
    },
  });
  const decoder = new TextDecoder();
  for await (const bytes of res.body!) parser.feed(decoder.decode(bytes, { stream: true }));
  if (tokens < 0) throw new Error("no usage chunk");
  return { tokens, ms: performance.now() - t0, ttftMs };
}

async function newKey(): Promise<string> {
  const headers = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
  const acct = (await (await fetch(url + "/admin/accounts", { method: "POST", headers, body: JSON.stringify({ name: "bench", credits: 1_000_000_000_000 }) })).json()) as { id: string };
  return ((await (await fetch(url + `/admin/accounts/${acct.id}/keys`, { method: "POST", headers, body: '{"name":"bench"}' })).json()) as { key: string }).key;
}

const cpu: Record<"direct" | "reelay", { ms: number; tokens: number }> = { direct: { ms: 0, tokens: 0 }, reelay: { ms: 0, tokens: 0 } };

/** aggregate tokens/s of `n` concurrent answers; the CPU they took is added to `cpu[who]` */
async function throughput(who: "direct" | "reelay", n: number, one: (i: number) => Promise<Run>): Promise<number> {
  const cpuBefore = who === "direct" ? cpuMsOf(process.pid) : cpuMsOf(server.pid);
  const t0 = performance.now();
  const runs = await Promise.all(Array.from({ length: n }, (_, i) => one(i)));
  const tokens = runs.reduce((s, r) => s + r.tokens, 0);
  const ms = performance.now() - t0;
  cpu[who].ms += (who === "direct" ? cpuMsOf(process.pid) : cpuMsOf(server.pid)) - cpuBefore;
  cpu[who].tokens += tokens;
  return (tokens / ms) * 1000;
}

try {
  for (let i = 0; i < 600; i++) {
    try { if ((await fetch(url + "/healthz")).status === 200) break; } catch {}
    await Bun.sleep(50);
  }
  const keys = await Promise.all([1, 2, 3, 4].map(() => newKey()));
  // warm-up: both paths, both concurrencies
  await throughput("direct", 4, (i) => direct(sequences[i]!, 32, i));
  await throughput("reelay", 4, (i) => viaReelay(keys[i]!, 32, i));
  cpu.direct = { ms: 0, tokens: 0 };
  cpu.reelay = { ms: 0, tokens: 0 };

  const tps: Record<string, number[]> = { "direct@1": [], "reelay@1": [], "direct@4": [], "reelay@4": [] };
  for (let round = 0; round < ROUNDS; round++) {
    const seed = 1000 + round;
    tps["direct@1"]!.push(await throughput("direct", 1, () => direct(sequences[0]!, TOKENS, seed)));
    tps["reelay@1"]!.push(await throughput("reelay", 1, () => viaReelay(keys[0]!, TOKENS, seed)));
    tps["direct@4"]!.push(await throughput("direct", 4, (i) => direct(sequences[i]!, TOKENS, seed + i)));
    tps["reelay@4"]!.push(await throughput("reelay", 4, (i) => viaReelay(keys[i]!, TOKENS, seed + i)));
  }
  const ttft: Record<string, number[]> = { direct: [], reelay: [] };
  for (let i = 0; i < TTFT_SAMPLES; i++) {
    ttft.direct!.push((await direct(sequences[0]!, 1, i)).ttftMs);
    ttft.reelay!.push((await viaReelay(keys[0]!, 1, i)).ttftMs);
  }

  const m = (k: string) => median(tps[k]!);
  const perK = (who: "direct" | "reelay") => (1000 * cpu[who].ms) / cpu[who].tokens;
  const rows = [
    ["tokens/s, 1 stream", m("direct@1"), m("reelay@1"), `${((100 * m("reelay@1")) / m("direct@1")).toFixed(1)}%`, "≥ 90%"],
    ["tokens/s, 4 streams (sum)", m("direct@4"), m("reelay@4"), `${((100 * m("reelay@4")) / m("direct@4")).toFixed(1)}%`, "≥ 90%"],
    ["CPU ms per 1,000 tokens", perK("direct"), perK("reelay"), `${((100 * perK("reelay")) / perK("direct")).toFixed(1)}%`, ""],
    ["time to first token, ms (p50)", median(ttft.direct!), median(ttft.reelay!), `+${(median(ttft.reelay!) - median(ttft.direct!)).toFixed(2)} ms`, "≤ +2 ms"],
  ];
  console.log(`\nstories260K, 1 thread per decode step, ${TOKENS}-token answers, medians of ${ROUNDS} alternating rounds (${TTFT_SAMPLES} samples for the first token)${stubBilling ? "; BILLING STUBBED" : ""}\n`);
  console.log(table(["measure", "node-llama-cpp direct", "through reelay", "reelay vs direct", "target"], rows));
  console.log(`\nall rounds, tokens/s: ${Object.entries(tps).map(([k, v]) => `${k} ${v.map((x) => x.toFixed(0)).join(" ")}`).join("; ")}`);
} finally {
  server.kill("SIGTERM");
  await server.exited;
  await context.dispose();
  await model.dispose();
  await dropDatabase(databaseUrl);
}
