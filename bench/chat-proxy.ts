/**
 * Chat proxy overhead (issue 4): `bun bench/chat-proxy.ts`
 *
 * Three separate processes next to the load generator: a fast fake upstream (Bun.serve answering a
 * fixed completion), a minimal Bun.serve+fetch pass-through proxy, and reelay (`bun src/main.ts
 * serve`, real Postgres, auth + hold/settle + usage record on every request). In one run:
 *  - non-streamed req/s and p50/p99 with wrk at 32 and 128 connections: (a) direct to the upstream,
 *    (b) through the minimal proxy, (c) through reelay;
 *  - streaming time-to-first-byte at 32 concurrent streams, measured by a Bun client process.
 * Env: BENCH_SECONDS (default 5) per wrk run.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, dropDatabase, freePort } from "../test/support/harness.ts";
import { haveWrk, table, wrk, type LoadResult } from "./lib/wrk.ts";

const role = process.argv[2];
const messages = [{ role: "user", content: "Name three colours." }];
const BODY = JSON.stringify({ model: "bench-chat", messages, max_tokens: 16 });
const STREAM_BODY = JSON.stringify({ model: "bench-chat", messages, max_tokens: 16, stream: true });

if (role === "upstream") await upstream(Number(process.argv[3]));
else if (role === "proxy") proxy(Number(process.argv[3]), process.argv[4]!);
else if (role === "ttfb") await ttfb(process.argv[3]!, process.argv[4]!, Number(process.argv[5]), Number(process.argv[6]));
else await main();

/** The fast fake upstream: a fixed completion, or 6 SSE chunks written at once. */
async function upstream(port: number) {
  const completion = JSON.stringify({
    id: "chatcmpl-bench", object: "chat.completion", created: 1700000000, model: "bench-upstream",
    choices: [{ index: 0, message: { role: "assistant", content: "Red, green and blue." }, logprobs: null, finish_reason: "stop" }],
    usage: { prompt_tokens: 12, completion_tokens: 6, total_tokens: 18 },
  });
  const chunk = (delta: object, finish: string | null) =>
    `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1700000000, model: "bench-upstream", choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], usage: null })}\n\n`;
  const words = ["Red", ",", " green", " and", " blue", "."];
  const rest = words.slice(1).map((w) => chunk({ content: w }, null)).join("") + chunk({}, "stop") +
    `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1700000000, model: "bench-upstream", choices: [], usage: { prompt_tokens: 12, completion_tokens: 6, total_tokens: 18 } })}\n\ndata: [DONE]\n\n`;
  const first = chunk({ role: "assistant", content: words[0] }, null);
  const enc = new TextEncoder();
  Bun.serve({
    port, hostname: "127.0.0.1",
    async fetch(req) {
      const body = (await req.json()) as { stream?: boolean };
      if (!body.stream) return new Response(completion, { headers: { "content-type": "application/json" } });
      return new Response(new ReadableStream({ start(c) { c.enqueue(enc.encode(first)); c.enqueue(enc.encode(rest)); c.close(); } }), { headers: { "content-type": "text/event-stream" } });
    },
  });
  console.log("ready");
}

/** The minimal pass-through proxy reelay is compared with: no auth, no billing, body streamed back. */
function proxy(port: number, target: string) {
  Bun.serve({
    port, hostname: "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      const res = await fetch(target + url.pathname, { method: req.method, headers: { "content-type": "application/json" }, body: await req.arrayBuffer() });
      return new Response(res.body, { status: res.status, headers: { "content-type": res.headers.get("content-type") ?? "application/json" } });
    },
  });
  console.log("ready");
}

/** `concurrency` loops of streamed requests for `seconds`; prints the time-to-first-byte percentiles. */
async function ttfb(url: string, keyList: string, concurrency: number, seconds: number) {
  const samples: number[] = [];
  const until = performance.now() + seconds * 1000;
  const keys = keyList.split(",");
  await Promise.all(Array.from({ length: concurrency }, async (_, i) => {
    const headers = { "content-type": "application/json", authorization: `Bearer ${keys[i % keys.length]}` };
    while (performance.now() < until) {
      const t0 = performance.now();
      const res = await fetch(url, { method: "POST", headers, body: STREAM_BODY });
      const reader = res.body!.getReader();
      const first = await reader.read();
      samples.push(performance.now() - t0);
      if (res.status !== 200 || first.done) throw new Error(`stream failed: ${res.status}`);
      while (!(await reader.read()).done);
    }
  }));
  samples.sort((a, b) => a - b);
  const pct = (p: number) => samples[Math.min(samples.length - 1, Math.ceil((p / 100) * samples.length) - 1)]!;
  console.log(JSON.stringify({ n: samples.length, p50: pct(50), p99: pct(99) }));
}

/**
 * wrk with a different API key per request, round-robin over `keys` (many clients, each with its
 * own account): the realistic load, since one account's hold/settle serialize on its row.
 */
async function wrkKeys(url: string, connections: number, seconds: number, keys: string[]): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), "wrk-keys-"));
  const script = join(dir, "keys.lua");
  writeFileSync(script, `local keys = {${keys.map((k) => JSON.stringify(k)).join(",")}}
local i = 0
local body = ${JSON.stringify(BODY)}
request = function()
  i = i + 1
  return wrk.format("POST", nil, { ["content-type"] = "application/json", ["authorization"] = "Bearer " .. keys[(i % #keys) + 1] }, body)
end
done = function(summary, latency, requests)
  io.write(string.format("RESULT %f %f %f %d\\n", summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end`);
  const proc = Bun.spawn(["wrk", "-t", "2", "-c", String(connections), "-d", `${seconds}s`, "--timeout", "10s", "-s", script, url], { stdout: "pipe", stderr: "pipe" });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  const m = /RESULT ([\d.]+) ([\d.]+) ([\d.]+) (\d+)/.exec(out);
  if (!m) throw new Error("wrk failed: " + out + (await new Response(proc.stderr).text()));
  return { rps: Number(m[1]), p50: Number(m[2]), p99: Number(m[3]), errors: Number(m[4]) };
}

function spawnRole(args: string[], env: Record<string, string> = {}) {
  return Bun.spawn(["bun", import.meta.path, ...args], { stdout: "pipe", stderr: "inherit", env: { ...process.env, ...env } });
}

async function waitReady(proc: ReturnType<typeof spawnRole>) {
  const reader = proc.stdout.getReader();
  const { value } = await reader.read();
  if (!new TextDecoder().decode(value).includes("ready")) throw new Error("role did not start");
  reader.releaseLock();
}

async function waitHttp(url: string) {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(url)).status === 200) return;
    } catch {}
    await Bun.sleep(50);
  }
  throw new Error(`${url} did not come up`);
}

async function main() {
  if (!haveWrk()) throw new Error("wrk is not installed: apt-get install -y wrk");
  const seconds = Number(process.env.BENCH_SECONDS ?? 5);
  const [upPort, proxyPort, reelayPort] = [freePort(), freePort(), freePort()];
  const upstreamUrl = `http://127.0.0.1:${upPort}`;
  const up = spawnRole(["upstream", String(upPort)]);
  await waitReady(up);
  const px = spawnRole(["proxy", String(proxyPort), upstreamUrl]);
  await waitReady(px);

  const dir = mkdtempSync(join(tmpdir(), "reelay-chat-bench-"));
  const modelsFile = join(dir, "models.json");
  writeFileSync(modelsFile, JSON.stringify({ builtins: false, models: [{ id: "bench-chat", plugin: "openai-compatible", options: { baseUrl: upstreamUrl + "/v1", upstreamModel: "bench-upstream" }, pricing: { inputPerMillion: 150_000, outputPerMillion: 600_000 }, maxOutputTokens: 256 }] }));
  const databaseUrl = await createTestDatabase();
  const admin = "bench-admin-token-0123456789";
  const reelay = Bun.spawn(["bun", "src/main.ts", "serve"], {
    cwd: join(import.meta.dir, ".."), stdout: "ignore", stderr: "inherit",
    env: { ...process.env, PORT: String(reelayPort), HOST: "127.0.0.1", DATABASE_URL: databaseUrl, REELAY_MODELS_FILE: modelsFile, REELAY_ADMIN_TOKEN: admin, REELAY_LOG_LEVEL: "warn", REELAY_LOG_FORMAT: "json", REELAY_RATE_RPM: "0", REELAY_RATE_TPM: "0", REELAY_PLUGINS_DIR: "/nonexistent" },
  });
  const reelayUrl = `http://127.0.0.1:${reelayPort}`;
  try {
    await waitHttp(reelayUrl + "/healthz");
    const adminHeaders = { authorization: `Bearer ${admin}`, "content-type": "application/json" };
    const keys: string[] = [];
    for (let i = 0; i < 128; i++) {
      const acct = (await (await fetch(reelayUrl + "/admin/accounts", { method: "POST", headers: adminHeaders, body: JSON.stringify({ name: `bench-${i}`, credits: 1_000_000_000_000 }) })).json()) as { id: string };
      keys.push(((await (await fetch(reelayUrl + `/admin/accounts/${acct.id}/keys`, { method: "POST", headers: adminHeaders, body: '{"name":"bench"}' })).json()) as { key: string }).key);
    }
    const key = keys[0]!;

    const targets = [
      { name: "direct", url: upstreamUrl + "/v1/chat/completions" },
      { name: "minimal proxy", url: `http://127.0.0.1:${proxyPort}/v1/chat/completions` },
      { name: "reelay", url: reelayUrl + "/v1/chat/completions" },
    ];
    const loadTargets = [...targets, { name: "reelay, 1 account", url: reelayUrl + "/v1/chat/completions" }];
    const headers = { "content-type": "application/json", authorization: `Bearer ${key}` };
    const rows: Array<Array<string | number>> = [];
    const results: Record<string, { rps: number; p50: number; p99: number }> = {};
    for (const connections of [32, 128]) {
      for (const tg of loadTargets) {
        const run = (s: number) => (tg.name === "reelay" ? wrkKeys(tg.url, connections, s, keys) : wrk(tg.url, { connections, seconds: s, method: "POST", headers, body: BODY }));
        await run(1); // warm-up
        const r = await run(seconds);
        results[`${tg.name}@${connections}`] = r;
        const base = results[`minimal proxy@${connections}`];
        rows.push([connections, tg.name, Math.round(r.rps), r.p50, r.p99, r.errors, base && tg.name.startsWith("reelay") ? `${((100 * r.rps) / base.rps).toFixed(0)}%` : "", base && tg.name.startsWith("reelay") ? `+${(r.p50 - base.p50).toFixed(2)} / +${(r.p99 - base.p99).toFixed(2)}` : ""]);
      }
    }
    console.log("\nnon-streamed POST /v1/chat/completions (wrk, " + seconds + " s per row; reelay: one key+account per request round-robin over 128, or all on 1 account)\n");
    console.log(table(["conns", "target", "req/s", "p50 ms", "p99 ms", "errors", "reelay / proxy req/s", "reelay − proxy p50 / p99 ms"], rows));

    const streamRows: Array<Array<string | number>> = [];
    const ttfbs: Record<string, { n: number; p50: number; p99: number }> = {};
    for (const tg of targets) {
      const p = spawnRole(["ttfb", tg.url, keys.slice(0, 32).join(","), "32", String(Math.max(2, Math.round(seconds / 2)))]);
      const out = await new Response(p.stdout).text();
      if ((await p.exited) !== 0) throw new Error(`ttfb run against ${tg.name} failed`);
      ttfbs[tg.name] = JSON.parse(out.trim().split("\n").at(-1)!);
      const r = ttfbs[tg.name]!;
      const base = ttfbs["minimal proxy"];
      streamRows.push([tg.name, r.n, r.p50, r.p99, base && tg.name === "reelay" ? `+${(r.p50 - base.p50).toFixed(2)} / +${(r.p99 - base.p99).toFixed(2)}` : ""]);
    }
    console.log("\nstreamed: time to first byte at 32 concurrent streams\n");
    console.log(table(["target", "streams", "p50 ms", "p99 ms", "reelay − proxy p50 / p99 ms"], streamRows));
    console.log(`\ntargets: reelay ≥ 50% of proxy req/s, added p50 ≤ 1.5 ms and p99 ≤ 5 ms at 32 connections, streaming first-byte overhead ≤ 1.5 ms`);
  } finally {
    reelay.kill("SIGTERM");
    await reelay.exited;
    up.kill();
    px.kill();
    await dropDatabase(databaseUrl);
  }
}
