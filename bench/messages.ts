/**
 * What the Anthropic Messages bridge costs over chat (issue 26), one command:  bun bench/messages.ts
 *
 * The same processes as bench/chat-proxy.ts: a fast fake OpenAI-compatible upstream, the minimal
 * Bun.serve + fetch proxy, and one reelay (`bun src/main.ts serve`: real Postgres, auth, limits,
 * exact billing with usage rows, request logs at info level, metrics; the in-process limiter). The
 * same request — "Name three colours.", max_tokens 16, one model on that upstream — is sent as
 * POST /v1/chat/completions and as POST /v1/messages (x-api-key, bridged through chat), and the
 * Messages request once more to `bench-claude`, an anthropic-plugin model on a fast fake Anthropic
 * API giving the same answer (passed through natively, no translation), in the same run,
 * alternating rows so that the machine's mood affects all alike:
 *  - non-streamed req/s, p50 / p99 at BENCH_CONNS (default 32) connections, 32 accounts
 *    round-robin, and CPU per request of the reelay process (utime + stime from /proc);
 *  - streamed time to first byte at a steady BENCH_STREAM_RATE streams a second (open loop, default
 *    200) and at 32 concurrent streams (closed loop), with the server's CPU per stream;
 *  - one table with the ratios of the Messages route to chat and of chat to the minimal proxy, and
 *    the issue's targets: Messages CPU per request ≤ 1.15 × chat, stream first byte ≤ 2 ms p50
 *    added at 200 streams/s, chat req/s ≥ 0.40 × the minimal proxy.
 * Env: BENCH_SECONDS (default 5) per row, BENCH_CONNS ("32"), BENCH_ROUNDS (2: chat, messages,
 * chat, messages … — each route's best row is kept).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, dropDatabase, freePort } from "../test/support/harness.ts";
import { BODY, MESSAGES_BODY, NATIVE_BODY } from "./lib/chat-roles.ts";
import { cpuMs } from "./lib/proc-cpu.ts";
import { haveWrk, table } from "./lib/wrk.ts";

const ROOT = join(import.meta.dir, "..");
const ROLES = join(import.meta.dir, "lib/chat-roles.ts");
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const conns = (process.env.BENCH_CONNS ?? "32").split(",").map(Number);
const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
const STREAM_RATE = Number(process.env.BENCH_STREAM_RATE ?? 200);
const ADMIN = "bench-admin-token-0123456789";

type Api = "chat" | "messages" | "native" | "proxy" | "direct";
const REELAY_APIS = ["chat", "messages", "native"] as const;
const LABEL: Record<(typeof REELAY_APIS)[number], string> = { chat: "reelay /v1/chat/completions", messages: "reelay /v1/messages (bridged)", native: "reelay /v1/messages (native)" };
interface Load { rps: number; p50: number; p99: number; errors: number; cpuUsPerReq: number }
interface Server { url: string; pid: number; stop(): Promise<void> }

const PATH: Record<Api, string> = { chat: "/v1/chat/completions", messages: "/v1/messages", native: "/v1/messages", proxy: "/v1/chat/completions", direct: "/v1/chat/completions" };

/** wrk at `connections`, the key of each request taken round-robin from `keys`; CPU of `pid` around it. */
async function load(api: Api, url: string, pid: number, connections: number, secs: number, keys: string[]): Promise<Load> {
  const dir = mkdtempSync(join(tmpdir(), "wrk-messages-"));
  const script = join(dir, "keys.lua");
  const header = api === "messages" || api === "native" ? `["x-api-key"] = keys[(i % #keys) + 1], ["anthropic-version"] = "2023-06-01"` : `["authorization"] = "Bearer " .. keys[(i % #keys) + 1]`;
  writeFileSync(script, `local keys = {${keys.map((k) => JSON.stringify(k)).join(",")}}
local i = 0
local body = ${JSON.stringify(api === "messages" ? MESSAGES_BODY : api === "native" ? NATIVE_BODY : BODY)}
request = function()
  i = i + 1
  return wrk.format("POST", nil, { ["content-type"] = "application/json", ${header} }, body)
end
done = function(summary, latency, requests)
  io.write(string.format("RESULT %f %f %f %d %d\\n", summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, summary.requests))
end`);
  const cpu0 = cpuMs(pid);
  const proc = Bun.spawn(["wrk", "-t", "2", "-c", String(connections), "-d", `${secs}s`, "--timeout", "10s", "-s", script, url + PATH[api]], { stdout: "pipe", stderr: "pipe" });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  const cpu = cpuMs(pid) - cpu0;
  rmSync(dir, { recursive: true, force: true });
  const m = /RESULT ([\d.]+) ([\d.]+) ([\d.]+) (\d+) (\d+)/.exec(out);
  if (!m) throw new Error("wrk failed: " + out + (await new Response(proc.stderr).text()));
  const requests = Number(m[5]);
  return { rps: Number(m[1]), p50: Number(m[2]), p99: Number(m[3]), errors: Number(m[4]), cpuUsPerReq: requests ? (cpu * 1000) / requests : NaN };
}

async function spawnRole(roleArgs: string[]): Promise<Server> {
  const proc = Bun.spawn(["bun", ROLES, ...roleArgs], { stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  const { value } = await reader.read();
  if (!new TextDecoder().decode(value).includes("ready")) throw new Error(`${roleArgs[0]} did not start`);
  reader.releaseLock();
  return { url: `http://127.0.0.1:${roleArgs[1]}`, pid: proc.pid, stop: async () => void (proc.kill(), await proc.exited) };
}

async function spawnReelay(env: Record<string, string>): Promise<Server> {
  const port = freePort();
  const proc = Bun.spawn(["bun", "src/main.ts", "serve"], {
    cwd: ROOT, stdout: "ignore", stderr: "inherit",
    env: {
      ...process.env, PORT: String(port), HOST: "127.0.0.1", REELAY_ADMIN_TOKEN: ADMIN, REELAY_LOG_LEVEL: "info", REELAY_LOG_FORMAT: "json",
      REELAY_PLUGINS_DIR: "/nonexistent", REELAY_RATE_RPM: "1000000000", REELAY_RATE_TPM: "1000000000000", ...env,
    },
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (await fetch(url + "/readyz").then((r) => r.status === 200, () => false)) break;
    if (i > 600 || proc.exitCode !== null) throw new Error("reelay did not come up");
    await Bun.sleep(50);
  }
  return { url, pid: proc.pid, stop: async () => void (proc.kill("SIGTERM"), await proc.exited) };
}

async function createKeys(url: string, n: number): Promise<string[]> {
  const headers = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
  const keys: string[] = [];
  for (let i = 0; i < n; i++) {
    const acct = (await (await fetch(url + "/admin/accounts", { method: "POST", headers, body: JSON.stringify({ name: `bench-${i}`, credits: 1_000_000_000_000 }) })).json()) as { id: string };
    keys.push(((await (await fetch(url + `/admin/accounts/${acct.id}/keys`, { method: "POST", headers, body: '{"name":"bench"}' })).json()) as { key: string }).key);
  }
  return keys;
}

/** Streams at `rate` a second (open loop) or 32 concurrent (closed loop); first-byte p50/p99 and the server's CPU per stream. */
async function ttfb(api: Api, url: string, pid: number, keys: string[], rate?: number) {
  const cpu0 = cpuMs(pid);
  const secs = String(Math.max(2, Math.round(seconds / 2)));
  const kind = api === "messages" || api === "native" ? api : "chat";
  const p = Bun.spawn(["bun", ROLES, ...(rate ? ["ttfb-rate", url + PATH[api], keys.join(","), String(rate), secs, kind] : ["ttfb", url + PATH[api], keys.join(","), "32", secs, kind])], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(p.stdout).text();
  if ((await p.exited) !== 0) throw new Error(`ttfb run against ${url} failed`);
  const r = JSON.parse(out.trim().split("\n").at(-1)!) as { n: number; p50: number; p99: number };
  return { ...r, cpuUsPerStream: ((cpuMs(pid) - cpu0) * 1000) / r.n };
}

/** A sanity check before measuring: the three answer 200 with the same text. */
async function check(url: string, key: string) {
  const chat = (await (await fetch(url + PATH.chat, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: BODY })).json()) as any;
  for (const body of [MESSAGES_BODY, NATIVE_BODY]) {
    const msg = (await (await fetch(url + PATH.messages, { method: "POST", headers: { "x-api-key": key, "content-type": "application/json" }, body })).json()) as any;
    if (chat.choices?.[0]?.message?.content !== msg.content?.[0]?.text) throw new Error(`the routes disagree: ${JSON.stringify(chat)} vs ${JSON.stringify(msg)}`);
  }
}

const pct = (x: number) => `${x.toFixed(0)}%`;
const plus = (x: number) => (x >= 0 ? "+" : "") + x.toFixed(2);

async function main() {
  if (!haveWrk()) throw new Error("wrk is not installed: apt-get install -y wrk");
  const started: Server[] = [];
  const databaseUrl = await createTestDatabase();
  const dir = mkdtempSync(join(tmpdir(), "reelay-messages-bench-"));
  try {
    const up = await spawnRole(["upstream", String(freePort())]);
    started.push(up);
    const px = await spawnRole(["proxy", String(freePort()), up.url]);
    started.push(px);
    const claude = await spawnRole(["anthropic-upstream", String(freePort())]);
    started.push(claude);
    const modelsFile = join(dir, "models.json");
    const pricing = { inputPerMillion: 150_000, outputPerMillion: 600_000 };
    writeFileSync(modelsFile, JSON.stringify({ builtins: false, models: [
      { id: "bench-chat", plugin: "openai-compatible", options: { baseUrl: up.url + "/v1", upstreamModel: "bench-upstream" }, pricing, maxOutputTokens: 256 },
      { id: "bench-claude", plugin: "anthropic", options: { baseUrl: claude.url, upstreamModel: "bench-claude-up" }, pricing, maxOutputTokens: 256 },
    ] }));
    const reelay = await spawnReelay({ DATABASE_URL: databaseUrl, REELAY_MODELS_FILE: modelsFile });
    started.push(reelay);
    const keys = await createKeys(reelay.url, 32);
    await check(reelay.url, keys[0]!);

    const target = (api: Api) => (api === "direct" ? up : api === "proxy" ? px : reelay);
    // warm-up: 1-second loads until one is within 10% of the one before (at most 6), as chat-proxy.ts
    const warmUp = async (api: Api, c: number) => {
      let last = 0;
      for (let i = 0; i < 6; i++) {
        const { rps } = await load(api, target(api).url, target(api).pid, c, 1, keys);
        if (last > 0 && Math.abs(rps - last) <= 0.1 * last) return;
        last = rps;
      }
    };
    const best: Record<string, Load> = {};
    for (const c of conns) {
      for (const api of ["direct", "proxy"] as const) {
        await warmUp(api, c);
        best[`${api}@${c}`] = await load(api, target(api).url, target(api).pid, c, seconds, keys);
      }
      for (let r = 0; r < rounds; r++) {
        for (const api of REELAY_APIS) {
          if (r === 0) await warmUp(api, c);
          const l = await load(api, reelay.url, reelay.pid, c, seconds, keys);
          const prev = best[`${api}@${c}`];
          if (!prev || l.rps > prev.rps) best[`${api}@${c}`] = l;
        }
      }
    }
    const streams: Record<string, Awaited<ReturnType<typeof ttfb>>> = {};
    for (const mode of [`${STREAM_RATE}/s`, "32 concurrent"] as const) {
      const rate = mode === "32 concurrent" ? undefined : STREAM_RATE;
      streams[`direct@${mode}`] = await ttfb("direct", up.url, up.pid, keys, rate);
      for (const api of REELAY_APIS) streams[`${api}@${mode}`] = await ttfb(api, reelay.url, reelay.pid, keys, rate);
    }

    const rows: Array<Array<string | number>> = [];
    for (const c of conns) {
      for (const api of ["direct", "proxy", ...REELAY_APIS] as const) {
        const l = best[`${api}@${c}`]!;
        const name = api === "direct" ? "direct (upstream)" : api === "proxy" ? "minimal Bun proxy" : LABEL[api];
        const reelayRow = api !== "direct" && api !== "proxy";
        const proxy = best[`proxy@${c}`]!;
        rows.push([
          c, name, Math.round(l.rps), l.p50, l.p99, l.errors, reelayRow ? Math.round(l.cpuUsPerReq) : "",
          reelayRow ? plus(l.p50 - best[`direct@${c}`]!.p50) : "", reelayRow ? pct((100 * l.rps) / proxy.rps) : "",
          api === "messages" || api === "native" ? `${(l.cpuUsPerReq / best[`chat@${c}`]!.cpuUsPerReq).toFixed(2)}×` : "",
        ]);
      }
    }
    console.log(`\nnon-streamed (wrk, ${seconds} s per row, best of ${rounds} alternating rounds for the reelay routes; 32 accounts)\n`);
    console.log(table(["conns", "target", "req/s", "p50 ms", "p99 ms", "errors", "CPU µs/req", "added p50 ms (vs direct)", "÷ proxy req/s", "CPU ÷ chat"], rows));

    const streamRows: Array<Array<string | number>> = [];
    for (const mode of [`${STREAM_RATE}/s`, "32 concurrent"]) {
      const d = streams[`direct@${mode}`]!;
      for (const api of ["direct", ...REELAY_APIS] as const) {
        const s = streams[`${api}@${mode}`]!;
        streamRows.push([api === "direct" ? "direct (upstream)" : LABEL[api], mode, s.n, s.p50, s.p99, api === "direct" ? "" : plus(s.p50 - d.p50),
          api === "messages" || api === "native" ? plus(s.p50 - streams[`chat@${mode}`]!.p50) : "", mode === "32 concurrent" && api !== "direct" ? Math.round(s.cpuUsPerStream) : ""]);
      }
    }
    console.log(`\nstreamed: time to first byte (a Bun client process). "${STREAM_RATE}/s" starts streams at a steady rate (open loop): the first byte of a server\nthat is not saturated; "32 concurrent" is a closed loop.\n`);
    console.log(table(["target", "load", "streams", "p50 ms", "p99 ms", "added p50 ms (vs direct)", "added p50 ms (vs chat)", "CPU µs/stream"], streamRows));

    const c = conns[0]!;
    const chat = best[`chat@${c}`]!, msg = best[`messages@${c}`]!, native = best[`native@${c}`]!, proxy = best[`proxy@${c}`]!;
    const rate = `${STREAM_RATE}/s`;
    const addedVsChat = streams[`messages@${rate}`]!.p50 - streams[`chat@${rate}`]!.p50;
    const addedVsDirect = streams[`messages@${rate}`]!.p50 - streams[`direct@${rate}`]!.p50;
    const targets = [
      ["Messages CPU per request ÷ chat's", "≤ 1.15", (msg.cpuUsPerReq / chat.cpuUsPerReq).toFixed(2), msg.cpuUsPerReq <= 1.15 * chat.cpuUsPerReq],
      [`Messages req/s ÷ chat's, ${c} conns`, "(reported)", pct((100 * msg.rps) / chat.rps), null],
      ["native Messages CPU per request ÷ chat's / ÷ bridged Messages'", "(reported)", `${(native.cpuUsPerReq / chat.cpuUsPerReq).toFixed(2)} / ${(native.cpuUsPerReq / msg.cpuUsPerReq).toFixed(2)}`, null],
      [`native Messages stream first byte added p50 at ${rate}, vs chat`, "(reported)", `${plus(streams[`native@${rate}`]!.p50 - streams[`chat@${rate}`]!.p50)} ms`, null],
      [`Messages stream first byte added p50 at ${rate}, vs chat / vs direct`, "≤ 2 ms", `${plus(addedVsChat)} / ${plus(addedVsDirect)} ms`, addedVsChat <= 2],
      [`chat req/s ÷ minimal proxy's, ${c} conns`, "≥ 0.40", (chat.rps / proxy.rps).toFixed(2), chat.rps >= 0.4 * proxy.rps],
    ] as const;
    console.log("\nissue 26 targets (ratios within this run)\n");
    console.log(table(["measure", "target", "measured", ""], targets.map(([a, b, v, ok]) => [a, b, v, ok === null ? "" : ok ? "met" : "MISSED"])));
  } finally {
    for (const s of started.reverse()) await s.stop().catch(() => {});
    await dropDatabase(databaseUrl);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
