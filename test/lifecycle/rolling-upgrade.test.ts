/**
 * A rolling upgrade from the previous release (commit 222e0b0, its own compiled binary built by
 * scripts/build-release.sh and cached) to this code, on one PostgreSQL database behind a balancer:
 * two old instances serve; one is taken out of rotation, stopped and replaced by a new one (which
 * migrates the shared database while the other old one serves on it); then the other. Chat traffic
 * runs throughout, and video jobs cross the versions (submitted on the old, finished and read on the
 * new, and the other way round: the expand/contract of migration 0010). No client error, every
 * answer charged once, the ledger equals the balance.
 *
 * Cost: the first run on a machine builds the old binary (npm ci + compile.sh: 2–5 minutes); later
 * runs find it in the cache ($REELAY_RELEASE_CACHE, default $TMPDIR/reelay-releases). test/timings.json
 * gives it the cold-cache time (a fresh machine's CI: 303 s, of which the test ~22 s), so the test
 * runner starts it first instead of late in a shard that then ends minutes after the others (keep it
 * when `--record` rewrites the file on a machine with the cache warm).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import type { Subprocess } from "bun";
import { openDatabase, query, type Database } from "../../src/db/index.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { newClientOn, spawnServer, type ChildServer } from "../support/child-server.ts";
import { ADMIN_TOKEN, createTestDatabase, dropDatabase, freePort } from "../support/harness.ts";
import { expectInvariants } from "../billing/support.ts";
import { startLoadBalancer, type LoadBalancer } from "./load-balancer.ts";
import { pngBase64 } from "../videos/support.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "reelay-rolling-"));
let fake: FakeOpenAI;
let url: string;
let db: Database;
let lb: LoadBalancer;
let oldBinary: string;
let env: (i: number) => Record<string, string>;
const ports = [freePort(), freePort()];
type Instance = { url: string; stop(): Promise<number | null>; logs(): string };
/** the log lines of every instance so far, stopped ones included: a failed job's story is in them */
const pastLogs: string[] = [];
const allLogs = () => [...pastLogs, ...instances.map((s) => s.logs())].join("\n");
const linesAbout = (id: string) => allLogs().split("\n").filter((l) => l.includes(id));
const instances: Instance[] = [];

/** the previous release's binary, as an operator runs it */
async function spawnOld(i: number): Promise<Instance> {
  const proc: Subprocess<"ignore", "pipe", "pipe"> = Bun.spawn([oldBinary, "serve"], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", HOST: "127.0.0.1", PORT: String(ports[i]), REELAY_ADMIN_TOKEN: ADMIN_TOKEN, REELAY_LOG_FORMAT: "json", REELAY_LOG_LEVEL: "warn", REELAY_PLUGINS_DIR: "/nonexistent-reelay-plugins", REELAY_RATE_RPM: "0", ...env(i) },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) out += decoder.decode(chunk, { stream: true });
  };
  void pump(proc.stdout).catch(() => {});
  void pump(proc.stderr).catch(() => {});
  const u = `http://127.0.0.1:${ports[i]}`;
  for (let t = 0; ; t++) {
    if ((await fetch(u + "/readyz").then((r) => r.status, () => 0)) === 200) break;
    if (proc.exitCode !== null || t > 600) throw new Error(`the previous release did not become ready (exit ${proc.exitCode})`);
    await Bun.sleep(100);
  }
  return { url: u, stop: async () => (proc.kill("SIGTERM"), await proc.exited), logs: () => out };
}
async function spawnNew(i: number): Promise<Instance> {
  const s: ChildServer = await spawnServer(env(i), { port: ports[i] });
  for (let t = 0; (await fetch(s.url + "/readyz").then((r) => r.status, () => 0)) !== 200; t++) {
    if (t > 600) throw new Error("the new release did not become ready");
    await Bun.sleep(100);
  }
  return { url: s.url, stop: async () => (s.proc.kill("SIGTERM"), await s.proc.exited), logs: () => s.stdout() };
}

beforeAll(async () => {
  const build = Bun.spawn(["bash", "scripts/build-release.sh"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(build.stdout).text(), new Response(build.stderr).text(), build.exited]);
  if (code !== 0) throw new Error(`building the previous release failed: ${err.slice(-2000)}`);
  oldBinary = out.trim().split("\n").pop()!;
  fake = await startFakeOpenAI({ tokens: 8 });
  const models = join(dir, "models.json");
  writeFileSync(models, JSON.stringify({
    builtins: true,
    models: [{ id: "chat", plugin: "openai-compatible", options: { baseUrl: fake.url, upstreamModel: "fake-model" }, pricing: { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 }, maxOutputTokens: 8 }],
  }));
  url = await createTestDatabase();
  env = (i: number) => ({ DATABASE_URL: url, REELAY_MODELS_FILE: models, REELAY_DATA_DIR: join(dir, `data-${i}`), REELAY_INSTANCE_ID: `rolling-${i}`, REELAY_HOLD_SWEEP_MS: "500", REELAY_SCHEDULER_POLL_MS: "200" });
  instances.push(await spawnOld(0), await spawnOld(1));
  db = await openDatabase({ databaseUrl: url, dataDir: "/nonexistent", poolSize: 2 });
  lb = startLoadBalancer(instances.map((s) => s.url), 100);
  for (let t = 0; lb.healthy().length < 2; t++) {
    if (t > 300) throw new Error("balancer never saw both instances");
    await Bun.sleep(50);
  }
}, 600_000);
afterAll(async () => {
  await lb?.stop();
  await Promise.all(instances.map((s) => s.stop()));
  await db?.close();
  await fake?.stop();
  if (url) await dropDatabase(url);
  rmSync(dir, { recursive: true, force: true });
}, 60_000);


async function submitVideo(base: string, key: string) {
  const res = await fetch(base + "/v1/videos/generations", {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "preview-motion", prompt: "a lighthouse at dusk", image: pngBase64(96, 64), seconds: 4, size: "480x832" }),
  });
  const body = (await res.json()) as { id: string };
  expect({ status: res.status, body: res.status === 202 ? null : body }).toEqual({ status: 202, body: null });
  return body.id;
}
async function waitCompleted(base: string, key: string, id: string) {
  for (let t = 0; t < 1200; t++) {
    const r = await fetch(`${base}/v1/videos/generations/${id}`, { headers: { authorization: `Bearer ${key}` } });
    const body = (await r.json()) as any;
    if (body.status === "completed") return { status: r.status, bytes: body.data?.[0]?.b64_json ? Buffer.from(body.data[0].b64_json, "base64").length : 0 };
    if (body.status === "failed" || r.status >= 400) return { status: r.status, failed: { body, log: linesAbout(id) } };
    await Bun.sleep(100);
  }
  throw new Error(`video job ${id} did not complete`);
}

test("previous release → this code, one instance at a time under load: no client error, video jobs cross versions, every answer charged once", async () => {
  const CREDIT = 500_000_000;
  const c = await newClientOn({ admin: (p, init = {}) => fetch(instances[0]!.url + p, { method: init.method ?? (init.body ? "POST" : "GET"), headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: init.body ? JSON.stringify(init.body) : undefined }) }, CREDIT);
  const outcomes: Array<{ id: string | null; status: number; detail?: string }> = [];
  let running = true;
  const workers = Array.from({ length: 3 }, async (_, w) => {
    for (let i = 0; running; i++) {
      try {
        const res = await fetch(lb.url + "/v1/chat/completions", { method: "POST", headers: { authorization: `Bearer ${c.key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: `hello ${w}.${i}` }], stream: i % 2 === 0 }) });
        const text = await res.text();
        outcomes.push({ id: res.headers.get("x-request-id"), status: res.status, detail: res.status === 200 ? undefined : text.slice(0, 200) });
      } catch (e) {
        outcomes.push({ id: null, status: 0, detail: String(e) });
      }
    }
  });
  // a job submitted on the old release before the roll
  const fromOld = await submitVideo(instances[0]!.url, c.key);
  const roll = async (i: number) => {
    // out of rotation first (HAProxy's drain: the previous release has no drain delay of its own), then stopped
    lb.disable(instances[i]!.url);
    await Bun.sleep(300);
    expect(await instances[i]!.stop()).toBe(0);
    pastLogs.push(instances[i]!.logs());
    instances[i] = await spawnNew(i);
    lb.enable(instances[i]!.url);
    for (let t = 0; lb.healthy().length < 2; t++) {
      if (t > 300) throw new Error("the new instance never joined");
      await Bun.sleep(50);
    }
  };
  await roll(1);
  // old (0) and new (1) on one database, both serving: jobs cross the versions
  const fromNew = await submitVideo(instances[1]!.url, c.key);
  const fromOld2 = await submitVideo(instances[0]!.url, c.key);
  const crossed = await Promise.all([waitCompleted(instances[1]!.url, c.key, fromOld), waitCompleted(instances[0]!.url, c.key, fromNew), waitCompleted(instances[1]!.url, c.key, fromOld2)]);
  expect(crossed.map((j) => ({ status: j.status, failed: (j as { failed?: unknown }).failed ?? null, mp4: ((j as { bytes?: number }).bytes ?? 0) > 100 }))).toEqual([0, 1, 2].map(() => ({ status: 200, failed: null, mp4: true })));
  // each ran without a hitch: one submit (the job on the old instance stopped by the roll: two,
  // its render there is gone), no video error logged; an old instance failing to complete a job
  // shows as more (its lease lapses, the next claim finds the render gone: "lost"). Other errors
  // may be logged: an old instance's sweeper deadlocks once with the new one's migration, say.
  const submits = await query<{ id: string; attempts: number }>(db.db, sql`SELECT id, attempts FROM video_jobs WHERE id IN (${fromOld}, ${fromNew}, ${fromOld2})`);
  const attempts = Object.fromEntries(submits.map((r) => [r.id, Number(r.attempts)]));
  expect({ fromOld: attempts[fromOld]! <= 2, fromNew: attempts[fromNew], fromOld2: attempts[fromOld2], errors: allLogs().split("\n").filter((l) => l.includes('"level":50') && l.includes("video")) }).toEqual({ fromOld: true, fromNew: 1, fromOld2: 1, errors: [] });
  await Bun.sleep(1_000);
  await roll(0);
  await Bun.sleep(1_000);
  running = false;
  await Promise.all(workers);

  expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
  expect(outcomes.length).toBeGreaterThan(20);
  // each answered chat once in usage, plus the three video jobs
  const settled = async () => (await query<{ n: number }>(db.db, sql`SELECT count(*)::int AS n FROM usage_records WHERE account_id = ${c.accountId}`))[0]!.n;
  for (let t = 0; (await settled()) < outcomes.length + 3 && t < 100; t++) await Bun.sleep(100);
  const rows = await query<{ ref: string; kind: string; cost: number }>(db.db, sql`SELECT ref, kind, cost::float8 AS cost FROM usage_records WHERE account_id = ${c.accountId}`);
  expect(rows.filter((r) => r.kind === "chat").map((r) => r.ref).sort()).toEqual(outcomes.map((o) => o.id!).sort());
  expect(rows.filter((r) => r.kind === "video").map((r) => r.ref).sort()).toEqual([fromOld, fromNew, fromOld2].sort());
  const [acct] = await query<{ balance: number }>(db.db, sql`SELECT balance::float8 AS balance FROM accounts WHERE id = ${c.accountId}`);
  expect(Number(acct!.balance)).toBe(CREDIT - rows.reduce((s, r) => s + Number(r.cost), 0));
  await expectInvariants(db.db, [c.accountId]);
}, 600_000);
