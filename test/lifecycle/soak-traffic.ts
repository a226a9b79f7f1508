/**
 * The soak (issue 34): the compiled binary on PostgreSQL under a steady mix of what clients do, with
 * the process's figures sampled every few seconds. Run in full by bench/soak.ts (30 minutes, a
 * table and a PNG chart) and in a short form by test/lifecycle/soak.test.ts (3 minutes, asserted).
 *
 * Traffic is open-loop: `rate` operations per second started on schedule whatever the answers take
 * (a closed loop would slow down with the server and hide a latency creep), in a fixed rotation of
 * 100 slots:
 *   chat 30 · stream 16 (one in four aborted by the client after its first event) · embeddings 12
 *   (the local model) · Responses stored, then read back 10 · usage reads 12 · console polling 10
 *   (admin stats, time series, video list, models) · account and balance 10
 * and a preview video job every `videoEveryMs` (1 s at 480x832), followed on its progress stream
 * to the end and announced by the account's webhook endpoint (a receiver here counts them).
 *
 * At the end the traffic stops, the videos finish, the server gets SIGTERM, and the database is
 * read: every account's ledger against its balance, nothing held, and one usage row for each
 * billable answer a client saw (its x-request-id, or the job id) and for nothing else.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import { startFakeOpenAI } from "../fakes/openai-upstream.ts";
import { ADMIN_TOKEN, freePort } from "../support/harness.ts";
import { pngBase64 } from "../videos/support.ts";

export const KINDS = ["chat", "stream", "embeddings", "responses", "usage", "console", "balance", "video"] as const;
export type Kind = (typeof KINDS)[number];

export interface SoakOptions {
  binary: string;
  databaseUrl: string;
  /** scratch directory: data dir, models file, the server's log */
  dir: string;
  durationMs: number;
  /** operations per second (videos not counted) */
  rate: number;
  sampleMs: number;
  videoEveryMs: number;
  accounts?: number;
  /** called with each sample as it is taken */
  onSample?: (s: Sample) => void;
  /** extra environment for the server */
  env?: Record<string, string>;
}

export interface KindWindow {
  n: number;
  errors: number;
  p50: number;
  p99: number;
}

export interface Sample {
  /** seconds since the traffic started */
  t: number;
  rssMb: number;
  heapMb: number;
  fds: number;
  threads: number;
  /** the server's connections to its database (pg_stat_activity) */
  dbConns: number;
  /** event-loop delay p99 over the window, ms (the server's own monitorEventLoopDelay) */
  loopP99Ms: number;
  holdsLive: number;
  holdsDead: number;
  holdsUpdates: number;
  holdsHotUpdates: number;
  /** operations started in the window, and those skipped because too many were in flight */
  started: number;
  skipped: number;
  kinds: Partial<Record<Kind, KindWindow>>;
}

export interface SoakResult {
  samples: Sample[];
  totals: Record<Kind, { n: number; errors: number; aborted: number }>;
  errors: string[];
  webhooks: number;
  videosCompleted: number;
  exitCode: number | null;
  /** accounts whose ledger did not sum to balance and held, or that still held credit after SIGTERM */
  ledgerMismatches: string[];
  /** billable answers with no usage row, and usage rows no client answer explains */
  missingUsage: string[];
  extraUsage: string[];
  usageRows: number;
  /** every latency, ms, with when it was measured (s since the traffic started) */
  latencies: Record<Kind, Array<[number, number]>>;
  /** the server's log lines at error level */
  errorLogs: string[];
  /** holds table after the run */
  holds: { live: number; dead: number; updates: number; hotUpdates: number; autovacuums: number; closed: number; leases: number };
}

const ROTATION: Kind[] = (() => {
  const weights: Array<[Kind, number]> = [["chat", 30], ["stream", 16], ["embeddings", 12], ["responses", 10], ["usage", 12], ["console", 10], ["balance", 10]];
  const slots: Kind[] = [];
  // interleaved, so any second of traffic has the same mix
  for (let i = 0; slots.length < 100; i++) for (const [k, w] of weights) if (i < w) slots.push(k);
  return slots;
})();

const pct = (xs: number[], p: number) => (xs.length === 0 ? 0 : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!);
const procField = (pid: number, field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);

export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  const fake = await startFakeOpenAI({ tokens: 16 });
  // streams take ~0.5 s (16 events 30 ms apart): long enough for a client abort mid-stream
  fake.behave({ delayBetweenChunksMs: 30 }, { model: "fake-stream" });
  let webhooks = 0;
  const receiver = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: async (req) => (await req.text(), webhooks++, new Response("ok")) });
  const pricing = { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 };
  const models = join(o.dir, "models.json");
  writeFileSync(models, JSON.stringify({
    builtins: true,
    models: [
      { id: "chat", plugin: "openai-compatible", options: { baseUrl: fake.url, upstreamModel: "fake-model" }, pricing, maxOutputTokens: 16 },
      { id: "chat-stream", plugin: "openai-compatible", options: { baseUrl: fake.url, upstreamModel: "fake-stream" }, pricing, maxOutputTokens: 16 },
    ],
  }));
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  const logFile = join(o.dir, "server.log");
  const proc = Bun.spawn([o.binary, "serve"], {
    cwd: o.dir,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: process.env.HOME ?? "/tmp",
      HOST: "127.0.0.1",
      PORT: String(port),
      DATABASE_URL: o.databaseUrl,
      REELAY_ADMIN_TOKEN: ADMIN_TOKEN,
      REELAY_SECRET_KEY: "soak-secret-key-0123456789abcdef0123456789",
      REELAY_DATA_DIR: join(o.dir, "data"),
      REELAY_MODELS_FILE: models,
      REELAY_LOG_FORMAT: "json",
      REELAY_LOG_LEVEL: "warn",
      REELAY_PLUGINS_DIR: "/nonexistent-reelay-plugins",
      REELAY_RATE_RPM: "0",
      REELAY_RATE_TPM: "0",
      REELAY_WEBHOOK_ALLOW_NETWORKS: "127.0.0.0/8",
      REELAY_SHUTDOWN_DRAIN_DELAY_MS: "0",
      ...o.env,
    },
    stdin: "ignore",
    stdout: Bun.file(logFile),
    stderr: Bun.file(logFile + ".err"),
  });
  const sql = postgres(o.databaseUrl, { max: 1, onnotice: () => {} });
  try {
    for (let t = 0; (await fetch(base + "/readyz").then((r) => r.status, () => 0)) !== 200; t++) {
      if (proc.exitCode !== null || t > 1200) throw new Error(`reelay did not become ready (exit ${proc.exitCode}): ${existsSync(logFile + ".err") ? readFileSync(logFile + ".err", "utf8").slice(-2000) : ""}`);
      await Bun.sleep(100);
    }
    const admin = (path: string, body?: unknown) =>
      fetch(base + path, { method: body ? "POST" : "GET", headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: body ? JSON.stringify(body) : undefined });
    const clients: Array<{ accountId: string; key: string }> = [];
    for (let i = 0; i < (o.accounts ?? 8); i++) {
      const acct = (await (await admin("/admin/accounts", { name: `soak-${i}`, credits: 1_000_000_000_000 })).json()) as { id: string };
      const k = (await (await admin(`/admin/accounts/${acct.id}/keys`, { name: "soak" })).json()) as { key: string };
      const hook = await fetch(base + "/v1/webhooks", { method: "POST", headers: { authorization: `Bearer ${k.key}`, "content-type": "application/json" }, body: JSON.stringify({ url: `http://127.0.0.1:${receiver.port}/hook` }) });
      if (hook.status !== 201) throw new Error(`webhook endpoint: ${hook.status} ${await hook.text()}`);
      clients.push({ accountId: acct.id, key: k.key });
    }

    /** refs of every billable answer (x-request-id, or the video job's id) */
    const billable = new Set<string>();
    // Ready means the database; a model loads on its first request (503 model_loading meanwhile:
    // the local embeddings model takes seconds, minutes on a loaded machine). Each one the traffic
    // uses is asked until it answers, before the clock starts.
    const warm: Array<[string, unknown]> = [
      ["/v1/chat/completions", { model: "chat", messages: [{ role: "user", content: "warm" }] }],
      ["/v1/chat/completions", { model: "chat-stream", messages: [{ role: "user", content: "warm" }] }],
      ["/v1/embeddings", { model: "use-lite", input: "warm" }],
    ];
    for (const [path, body] of warm) {
      for (let t = 0; ; t++) {
        const res = await fetch(base + path, { method: "POST", headers: { authorization: `Bearer ${clients[0]!.key}`, "content-type": "application/json" }, body: JSON.stringify(body) });
        const text = await res.text();
        if (res.status === 200) {
          billable.add(res.headers.get("x-request-id")!);
          break;
        }
        if (proc.exitCode !== null || t > 600) throw new Error(`${path} never answered: ${res.status} ${text}`);
        await Bun.sleep(500);
      }
    }
    // open the database pool before the clock starts (a connection opened under load can take
    // longer than the 2 s connect timeout: a 503 that says nothing about uptime)
    for (let round = 0; round < 3; round++) await Promise.all(Array.from({ length: 24 }, (_, i) => fetch(base + "/v1/usage?limit=1", { headers: { authorization: `Bearer ${clients[i % clients.length]!.key}` } }).then((r) => r.text(), () => "")));

    const totals = Object.fromEntries(KINDS.map((k) => [k, { n: 0, errors: 0, aborted: 0 }])) as SoakResult["totals"];
    const errors: string[] = [];
    let window: Record<Kind, number[]> & { errors: Record<string, number> } = fresh();
    function fresh() {
      return Object.assign(Object.fromEntries(KINDS.map((k) => [k, [] as number[]])) as Record<Kind, number[]>, { errors: {} as Record<string, number> });
    }
    const fail = (kind: Kind, what: string) => {
      totals[kind].errors++;
      window.errors[kind] = (window.errors[kind] ?? 0) + 1;
      if (errors.length < 200) errors.push(`${kind}: ${what.slice(0, 300)}`);
    };
    const latencies = Object.fromEntries(KINDS.map((k) => [k, []])) as unknown as SoakResult["latencies"];
    let tStart = 0;
    const record = (kind: Kind, since: number) => {
      const now = performance.now();
      window[kind].push(now - since);
      latencies[kind].push([(now - tStart) / 1000, now - since]);
    };
    const auth = (key: string) => ({ authorization: `Bearer ${key}`, "content-type": "application/json" });

    async function op(kind: Kind, n: number): Promise<void> {
      const c = clients[n % clients.length]!;
      const t0 = performance.now();
      const post = (path: string, body: unknown) => fetch(base + path, { method: "POST", headers: auth(c.key), body: JSON.stringify(body) });
      const get = (path: string, key = c.key) => fetch(base + path, { headers: auth(key) });
      let res: Response;
      switch (kind) {
        case "chat":
          res = await post("/v1/chat/completions", { model: "chat", messages: [{ role: "user", content: `Say something, ${n}.` }] });
          if (res.status === 200) billable.add(res.headers.get("x-request-id")!);
          break;
        case "stream": {
          const abort = n % 4 === 0;
          const ctl = new AbortController();
          res = await post("/v1/chat/completions", { model: "chat-stream", messages: [{ role: "user", content: `Tell a story, ${n}.` }], stream: true });
          if (res.status !== 200) break;
          billable.add(res.headers.get("x-request-id")!);
          const reader = res.body!.getReader();
          let text = "";
          try {
            for (;;) {
              const { done, value } = await reader.read();
              if (done) break;
              text += new TextDecoder().decode(value);
              if (abort && text.includes("data: {")) {
                await reader.cancel();
                ctl.abort();
                totals.stream.aborted++;
                break;
              }
            }
          } catch (e) {
            return fail(kind, String(e));
          }
          if (!abort && !text.includes("data: [DONE]")) return fail(kind, `stream ended without [DONE]: ${text.slice(-200)}`);
          record("stream", t0);
          totals.stream.n++;
          return;
        }
        case "embeddings":
          res = await post("/v1/embeddings", { model: "use-lite", input: [`soak line ${n}`, "a second, longer line of text to embed"] });
          if (res.status === 200) billable.add(res.headers.get("x-request-id")!);
          break;
        case "responses": {
          res = await post("/v1/responses", { model: "chat", input: `Remember ${n}.`, store: true });
          if (res.status !== 200) break;
          billable.add(res.headers.get("x-request-id")!);
          const { id } = (await res.json()) as { id: string };
          res = await get(`/v1/responses/${id}`);
          break;
        }
        case "usage":
          res = await get("/v1/usage?limit=20");
          break;
        case "console": {
          const paths = ["/admin/stats", "/admin/usage/timeseries?bucket=1m", "/admin/videos?limit=20", "/admin/models"];
          res = await fetch(base + paths[n % paths.length]!, { headers: auth(ADMIN_TOKEN) });
          break;
        }
        case "balance":
          res = await get("/v1/account");
          break;
        case "video":
          throw new Error("videos run on their own timer");
      }
      const body = await res.text();
      if (res.status !== 200) return fail(kind, `${res.status} ${body}`);
      record(kind, t0);
      totals[kind].n++;
    }

    let videosCompleted = 0;
    async function video(n: number): Promise<void> {
      const c = clients[n % clients.length]!;
      const t0 = performance.now();
      const res = await fetch(base + "/v1/videos/generations", { method: "POST", headers: auth(c.key), body: JSON.stringify({ model: "preview-motion", prompt: "a lighthouse at dusk", image: pngBase64(96, 64), seconds: 1, size: "480x832" }) });
      const body = (await res.json()) as { id: string };
      if (res.status !== 202) return fail("video", `${res.status} ${JSON.stringify(body)}`);
      record("video", t0);
      totals.video.n++;
      billable.add(body.id); // accepted: charged when it completes, whatever this client sees next
      // the progress stream, to its end (the final job)
      const events = await (await fetch(`${base}/v1/videos/generations/${body.id}/events`, { headers: auth(c.key) })).text();
      const last = events.trim().split("\n").filter((l) => l.startsWith("data: ")).at(-1) ?? "";
      if (!last.includes('"completed"')) return fail("video", `progress stream ended with ${last.slice(0, 200)}`);
      const content = await fetch(`${base}/v1/videos/generations/${body.id}/content`, { headers: auth(c.key) });
      const bytes = (await content.arrayBuffer()).byteLength;
      if (content.status !== 200 || bytes < 1000) return fail("video", `content ${content.status}, ${bytes} bytes`);
      videosCompleted++;
    }

    const inflight = new Set<Promise<void>>();
    const track = (p: Promise<void>, kind: Kind) => {
      const q = p.catch((e) => fail(kind, String(e))).finally(() => inflight.delete(q));
      inflight.add(q);
    };
    const MAX_IN_FLIGHT = Math.max(64, o.rate * 4);
    const samples: Sample[] = [];
    let started = 0, skipped = 0, windowStarted = 0, windowSkipped = 0, videos = 0;
    const t0 = (tStart = performance.now());
    const ticker = setInterval(() => {
      const due = Math.floor(((performance.now() - t0) / 1000) * o.rate);
      while (started < due) {
        const kind = ROTATION[started % ROTATION.length]!;
        const n = started++;
        if (inflight.size >= MAX_IN_FLIGHT) {
          skipped++;
          windowSkipped++;
          continue;
        }
        windowStarted++;
        track(op(kind, n), kind);
      }
    }, 5);
    const videoTimer = setInterval(() => track(video(videos++), "video"), o.videoEveryMs);
    track(video(videos++), "video");

    let lastLoop = 0;
    async function sample(): Promise<Sample> {
      const w = window;
      window = fresh();
      const metrics = await fetch(base + "/metrics", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).then((r) => r.text(), () => "");
      const metric = (name: string) => Number(new RegExp(`^${name.replace(/[{}".=]/g, (m) => "\\" + m)} (\\S+)$`, "m").exec(metrics)?.[1] ?? NaN);
      const loop = metric('nodejs_eventloop_lag_seconds{quantile="0.99"}');
      if (Number.isFinite(loop)) lastLoop = loop * 1000;
      const [conns] = await sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`;
      const [h] = await sql`SELECT n_live_tup::int AS live, n_dead_tup::int AS dead, n_tup_upd::int AS upd, n_tup_hot_upd::int AS hot FROM pg_stat_user_tables WHERE relname = 'holds'`;
      const kinds: Sample["kinds"] = {};
      for (const k of KINDS) if (w[k].length > 0 || w.errors[k]) kinds[k] = { n: w[k].length, errors: w.errors[k] ?? 0, p50: pct(w[k], 50), p99: pct(w[k], 99) };
      const s: Sample = {
        t: Math.round((performance.now() - t0) / 1000),
        rssMb: procField(proc.pid, "VmRSS") / 1024,
        heapMb: metric("nodejs_heap_size_used_bytes") / 2 ** 20,
        fds: readdirSync(`/proc/${proc.pid}/fd`).length,
        threads: procField(proc.pid, "Threads"),
        dbConns: conns!.n,
        loopP99Ms: lastLoop,
        holdsLive: h?.live ?? 0,
        holdsDead: h?.dead ?? 0,
        holdsUpdates: h?.upd ?? 0,
        holdsHotUpdates: h?.hot ?? 0,
        started: windowStarted,
        skipped: windowSkipped,
        kinds,
      };
      windowStarted = windowSkipped = 0;
      return s;
    }
    const end = t0 + o.durationMs;
    for (let next = t0 + o.sampleMs; next <= end + 1; next += o.sampleMs) {
      await Bun.sleep(Math.max(0, next - performance.now()));
      if (proc.exitCode !== null) throw new Error(`reelay exited during the soak (${proc.exitCode})`);
      const s = await sample();
      samples.push(s);
      o.onSample?.(s);
    }
    clearInterval(ticker);
    clearInterval(videoTimer);
    await Promise.race([Promise.all([...inflight]), Bun.sleep(120_000)]);
    if (inflight.size > 0) errors.push(`${inflight.size} operations still running 120 s after the traffic stopped`);

    proc.kill("SIGTERM");
    const exitCode = await Promise.race([proc.exited, Bun.sleep(60_000).then(() => null)]);
    if (exitCode === null) proc.kill(9);

    // the money, read after the process is gone
    const ids = clients.map((c) => c.accountId);
    const ledger = await sql`
      SELECT a.id, a.balance::float8 AS balance, a.held::float8 AS held,
        COALESCE((SELECT sum(amount) FROM ledger l WHERE l.account_id = a.id), 0)::float8 AS ledger_amount,
        COALESCE((SELECT sum(held_change) FROM ledger l WHERE l.account_id = a.id), 0)::float8 AS ledger_held,
        COALESCE((SELECT sum(amount) FROM holds h WHERE h.account_id = a.id AND h.state = 'open'), 0)::float8 AS open_holds
      FROM accounts a WHERE a.id IN ${sql(ids)}`;
    const ledgerMismatches = ledger
      .filter((r) => r.balance !== r.ledger_amount || r.held !== r.ledger_held || r.held !== 0 || r.open_holds !== 0)
      .map((r) => JSON.stringify(r));
    const usage = await sql`SELECT ref, kind, route, status, cost::float8 AS cost, error_code FROM usage_records WHERE account_id IN ${sql(ids)}`;
    const refs = new Set(usage.map((r) => r.ref as string));
    const missingUsage = [...billable].filter((r) => !refs.has(r));
    // a request that failed upstream has its usage row too, charging nothing (the client saw the error)
    const extraUsage = usage.filter((r) => !billable.has(r.ref) && !(r.cost === 0 && r.status >= 400)).map((r) => JSON.stringify(r));
    const [hs] = await sql`SELECT n_live_tup::int AS live, n_dead_tup::int AS dead, n_tup_upd::int AS updates, n_tup_hot_upd::int AS "hotUpdates", autovacuum_count::int AS autovacuums,
      (SELECT count(*) FROM holds WHERE state <> 'open')::int AS closed, (SELECT count(*) FROM holds WHERE kind = 'lease')::int AS leases
      FROM pg_stat_user_tables WHERE relname = 'holds'`;
    const log = readFileSync(logFile, "utf8") + (existsSync(logFile + ".err") ? readFileSync(logFile + ".err", "utf8") : "");
    const errorLogs = log.split("\n").filter((l) => /"level":(50|60)|"level":"(error|fatal)"/.test(l)).slice(0, 50);
    return { samples, totals, latencies, errors, webhooks, videosCompleted, exitCode, ledgerMismatches, missingUsage, extraUsage, usageRows: refs.size, errorLogs, holds: hs as SoakResult["holds"] };
  } finally {
    if (proc.exitCode === null) proc.kill(9);
    await sql.end();
    receiver.stop(true);
    await fake.stop();
  }
}

/** A series is flat when its last third is no higher than its first third plus `slack` (medians). */
export function growth(xs: number[]): { first: number; last: number } {
  const third = Math.max(1, Math.floor(xs.length / 3));
  const med = (ys: number[]) => pct(ys, 50);
  return { first: med(xs.slice(0, third)), last: med(xs.slice(-third)) };
}

/** The `p`th percentile of a kind's latencies measured between `fromS` and `toS` (seconds since the start). */
export function pctBetween(r: Pick<SoakResult, "latencies">, kind: Kind, fromS: number, toS: number, p: number): number {
  return pct(r.latencies[kind].filter(([t]) => t >= fromS && t < toS).map(([, ms]) => ms), p);
}
