/**
 * Backup and restore, end to end: a server with data (fixtures.ts at the current schema) and chat
 * traffic running; `reelay backup <dir>` taken in the middle of it (pg_dump on PostgreSQL; on PGlite
 * a consistent copy asked of the running server); the copy restored into a fresh database (pg_restore
 * / unpacking the tarball) and a fresh server started on it: every balance equals its ledger, every
 * fixture balance, key, job and stored response reads back, and the load account's credit is whole
 * (what was charged before the backup is in it; a hold or lease open at backup time is released by
 * the sweeper once it expires).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { startServer, type Running } from "../../src/boot.ts";
import { openDatabase, query } from "../../src/db/index.ts";
import { MIGRATIONS } from "../../src/db/migrations.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-upstream.ts";
import { ADMIN_TOKEN, createTestDatabase, dropDatabase, testConfig } from "../support/harness.ts";
import { expectInvariants } from "../billing/support.ts";
import { eventually } from "../chat/chat-server.ts";
import { buildFixture, FIXTURE_SECRET_KEY, type Fixture } from "./fixtures.ts";
import { expectFixtureReadsBack } from "./readback.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const root = mkdtempSync(join(tmpdir(), "reelay-backup-"));
let fake: FakeOpenAI;
let models: string;
const urls: string[] = [];

beforeAll(async () => {
  fake = await startFakeOpenAI({ tokens: 8 });
  models = join(root, "models.json");
  writeFileSync(models, JSON.stringify({ builtins: true, models: [{ id: "chat", plugin: "openai-compatible", options: { baseUrl: fake.url, upstreamModel: "fake-model" }, pricing: { inputPerMillion: 3_000_000, outputPerMillion: 15_000_000 }, maxOutputTokens: 8 }] }));
});
afterAll(async () => {
  await fake?.stop();
  for (const u of urls) await dropDatabase(u);
  rmSync(root, { recursive: true, force: true });
});

// no request-rate limit: the load runs as fast as the machine allows (a quiet one passed the
// default 600 a minute within 3 s, and the load then saw 429s). Holds and leases expire within
// seconds: a backup can catch either open (a busy CI machine caught the first request's exact hold,
// before the account had a lease), and the restored copy releases it once it has expired — at the
// default hold TTL (15 minutes), long after this test has looked.
const env = () => ({ REELAY_RATE_RPM: "0", REELAY_SECRET_KEY: FIXTURE_SECRET_KEY, REELAY_MODELS_FILE: models, REELAY_HOLD_SWEEP_MS: "100", REELAY_SCHEDULER_POLL_MS: "60000", REELAY_WEBHOOK_POLL_MS: "60000", REELAY_LEASE_TTL_MS: "2000", REELAY_HOLD_TTL_SECONDS: "3" });

/** chat traffic on a funded account until `stop` resolves; returns how many requests were answered */
async function withLoad(running: Running, during: () => Promise<void>) {
  const admin = (path: string, body?: unknown) => fetch(running.url + path, { method: body ? "POST" : "GET", headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: body ? JSON.stringify(body) : undefined });
  const acct = (await (await admin("/admin/accounts", { name: "load", credits: 50_000_000 })).json()) as { id: string };
  const key = ((await (await admin(`/admin/accounts/${acct.id}/keys`, { name: "k" })).json()) as { key: string }).key;
  let running_ = true;
  let answered = 0;
  const workers = Array.from({ length: 3 }, async () => {
    while (running_) {
      const res = await fetch(running.url + "/v1/chat/completions", { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "hi" }], stream: answered % 2 === 0 }) });
      await res.text();
      expect(res.status).toBe(200);
      answered++;
    }
  });
  // the backup must catch something charged: wait for the first answer's usage row (GET /v1/usage
  // waits for the settlements under way), not a fixed time — a busy CI machine had answered nothing
  // 500 ms in, and the restored account had no charge to check
  await eventually(async () => ((await (await fetch(running.url + "/v1/usage?limit=1", { headers: { authorization: `Bearer ${key}` } })).json()) as { data: unknown[] }).data.length > 0, 30_000);
  await during();
  await Bun.sleep(300);
  running_ = false;
  await Promise.all(workers);
  return { accountId: acct.id, answered };
}

async function cli(args: string[], extraEnv: Record<string, string>) {
  const p = Bun.spawn(["bun", "src/main.ts", ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", REELAY_ADMIN_TOKEN: ADMIN_TOKEN, REELAY_LOG_LEVEL: "warn", REELAY_PLUGINS_DIR: "/nonexistent-reelay-plugins", ...extraEnv }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`reelay ${args.join(" ")}: exit ${code}: ${err}`);
  return JSON.parse(out.trim().split("\n").pop()!) as { file: string; database: string; via?: string };
}

async function checkRestored(config: ReturnType<typeof testConfig>, fx: Fixture, loadAccount: string) {
  const running = await startServer(config);
  try {
    expect((await fetch(running.url + "/readyz")).status).toBe(200);
    await expectFixtureReadsBack(running.url!, running.deps.database.db, fx);
    // the load account: whatever the backup caught of it is whole
    // a hold or lease open at backup time is released by the sweeper once its TTL (3 s here) passed
    const openHolds = async () => (await query<{ n: number }>(running.deps.database.db, sql`SELECT count(*)::int AS n FROM holds WHERE account_id = ${loadAccount} AND state = 'open'`))[0]!.n;
    await eventually(async () => (await openHolds()) === 0, 20_000).catch(async () => expect(await openHolds()).toBe(0));
    await expectInvariants(running.deps.database.db, [...fx.accounts.map((a) => a.id), loadAccount]);
    const [acct] = await query<{ balance: number; held: number; charged: number }>(running.deps.database.db, sql`
      SELECT a.balance::float8 AS balance, a.held::float8 AS held, (SELECT coalesce(sum(cost), 0) FROM usage_records u WHERE u.account_id = a.id)::float8 AS charged FROM accounts a WHERE a.id = ${loadAccount}`);
    expect({ balance: Number(acct!.balance), held: Number(acct!.held) }).toEqual({ balance: 50_000_000 - Number(acct!.charged), held: 0 });
    expect(Number(acct!.charged)).toBeGreaterThan(0);
  } finally {
    await running.stop();
  }
}

describe("backup under load and restore into a fresh instance", () => {
  test("PostgreSQL: reelay backup (pg_dump), pg_restore into an empty database", async () => {
    const url = await createTestDatabase();
    const restored = await createTestDatabase();
    urls.push(url, restored);
    const old = await openDatabase({ databaseUrl: url, dataDir: "/nonexistent", poolSize: 2 });
    const fx = await buildFixture(old.db, MIGRATIONS.length - 1, "b");
    await old.close();
    const running = await startServer(testConfig({ DATABASE_URL: url, REELAY_DATA_DIR: join(root, "pg-journal"), ...env() }));
    let file = "";
    let load: { accountId: string };
    try {
      load = await withLoad(running, async () => {
        file = (await cli(["backup", join(root, "pg-backups")], { DATABASE_URL: url })).file;
      });
    } finally {
      await running.stop();
    }
    const p = Bun.spawn(["pg_restore", "--no-owner", "--exit-on-error", "-d", restored, file], { stdout: "ignore", stderr: "pipe" });
    const [err, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
    expect({ code, err }).toEqual({ code: 0, err: "" });
    await checkRestored(testConfig({ DATABASE_URL: restored, REELAY_DATA_DIR: join(root, "pg-journal-2"), ...env() }), fx, load!.accountId);
  }, 180_000);

  test("PGlite: reelay backup while the server runs (a consistent copy through the server), unpacked into an empty directory", async () => {
    const dir = join(root, "pglite");
    const seeded = await openDatabase({ databaseUrl: null, dataDir: dir, seed: null });
    const fx = await buildFixture(seeded.db, MIGRATIONS.length - 1, "l");
    await seeded.close();
    const running = await startServer(testConfig({ REELAY_DATA_DIR: dir, ...env() }));
    let backup: { file: string; database: string; via?: string } = { file: "", database: "" };
    let load: { accountId: string };
    try {
      load = await withLoad(running, async () => {
        const port = new URL(running.url!).port;
        backup = await cli(["backup", join(root, "pglite-backups")], { REELAY_DATA_DIR: dir, PORT: port, HOST: "127.0.0.1" });
      });
    } finally {
      await running.stop();
    }
    expect(backup.via).toBeDefined(); // taken by the running server, not by opening its directory
    const restoredDir = join(root, "pglite-restored");
    mkdirSync(restoredDir);
    const tar = Bun.spawn(["tar", "-xzf", backup.file, "-C", restoredDir], { stdout: "ignore", stderr: "pipe" });
    expect(await tar.exited).toBe(0);
    expect(readdirSync(restoredDir)).toContain("PG_VERSION");
    await checkRestored(testConfig({ REELAY_DATA_DIR: restoredDir, ...env() }), fx, load!.accountId);
  }, 180_000);
});
