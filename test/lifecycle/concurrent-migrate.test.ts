/**
 * Several instances migrating one PostgreSQL database at once: every migration is applied exactly
 * once (one process applies it, the others find it done), on an empty database, on an old one (the
 * previous release's schema with data), and when the process that was migrating is killed half-way
 * through its transaction (another instance then applies the whole set). `reelay migrate --check`
 * says what is pending and exits 1 until it is applied, then 0.
 */
import { afterAll, expect, test } from "bun:test";
import postgres from "postgres";
import { openDatabase } from "../../src/db/index.ts";
import { MIGRATIONS } from "../../src/db/migrations.ts";
import { spawnServer } from "../support/child-server.ts";
import { ADMIN_TOKEN, createTestDatabase, dropDatabase } from "../support/harness.ts";
import { buildFixture, FIXTURE_SECRET_KEY } from "./fixtures.ts";
import { expectFixtureReadsBack } from "./readback.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const ALL = MIGRATIONS.map((m) => m.name);
const urls: string[] = [];
afterAll(async () => {
  for (const u of urls) await dropDatabase(u);
});

function cli(args: string[], databaseUrl: string) {
  return Bun.spawn(["bun", "src/main.ts", ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", DATABASE_URL: databaseUrl, REELAY_ADMIN_TOKEN: ADMIN_TOKEN, REELAY_LOG_FORMAT: "json", REELAY_LOG_LEVEL: "info", REELAY_PLUGINS_DIR: "/nonexistent-reelay-plugins" },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
}
async function run(args: string[], databaseUrl: string) {
  const p = cli(args, databaseUrl);
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  return { out, err, code };
}
/** the migrations a process's log says it applied */
const appliedIn = (out: string) =>
  out.split("\n").flatMap((l) => {
    try {
      const j = JSON.parse(l) as { msg?: string; applied?: string[] };
      return j.msg === "migrations applied" ? j.applied ?? [] : [];
    } catch {
      return [];
    }
  });
async function recorded(url: string) {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return (await sql<{ name: string }[]>`SELECT name FROM reelay_migrations ORDER BY name`).map((r) => r.name);
  } finally {
    await sql.end();
  }
}

test("three `reelay migrate` at once on an empty database: each migration applied by one of them; --check then passes", async () => {
  const url = await createTestDatabase();
  urls.push(url);
  const before = await run(["migrate", "--check"], url);
  expect(before.code).toBe(1);
  expect(JSON.parse(before.out.trim().split("\n").pop()!).pending).toEqual(ALL);
  const runs = await Promise.all([0, 1, 2].map(() => run(["migrate"], url)));
  expect(runs.map((r) => r.code)).toEqual([0, 0, 0]);
  expect(runs.flatMap((r) => appliedIn(r.out)).sort()).toEqual([...ALL].sort());
  expect(await recorded(url)).toEqual([...ALL].sort());
  const after = await run(["migrate", "--check"], url);
  expect({ code: after.code, pending: JSON.parse(after.out.trim().split("\n").pop()!).pending }).toEqual({ code: 0, pending: [] });
}, 120_000);

test("two servers booting at once on the previous release's schema with data: one migrates, both serve, the data reads back", async () => {
  const url = await createTestDatabase();
  urls.push(url);
  const n = ALL.indexOf("0005_responses_and_usage_route"); // the last release's schema (222e0b0)
  const old = await openDatabase({ databaseUrl: url, dataDir: "/nonexistent", poolSize: 2 });
  const fx = await buildFixture(old.db, n, "c");
  const env = { DATABASE_URL: url, REELAY_SECRET_KEY: FIXTURE_SECRET_KEY, REELAY_HOLD_SWEEP_MS: "100", REELAY_SCHEDULER_POLL_MS: "60000", REELAY_WEBHOOK_POLL_MS: "60000" };
  const servers = await Promise.all([spawnServer(env), spawnServer(env)]);
  try {
    for (const s of servers) {
      for (let i = 0; (await fetch(s.url + "/readyz")).status !== 200; i++) {
        if (i > 300) throw new Error("not ready");
        await Bun.sleep(100);
      }
    }
    const applied = servers.map((s) => appliedIn(s.stdout()));
    expect(applied.flat().sort()).toEqual(ALL.slice(n + 1).sort());
    expect(applied.filter((a) => a.length > 0).length).toBe(1);
    await expectFixtureReadsBack(servers[1]!.url, old.db, fx);
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
    await old.close();
  }
  expect(await recorded(url)).toEqual([...ALL].sort());
}, 120_000);

test("the migrating process killed half-way: its transaction rolls back, the next instance applies the whole set once", async () => {
  const url = await createTestDatabase();
  urls.push(url);
  const n = ALL.indexOf("0005_responses_and_usage_route");
  const old = await openDatabase({ databaseUrl: url, dataDir: "/nonexistent", poolSize: 1 });
  await buildFixture(old.db, n, "k");
  await old.close();
  // hold a lock on a table the next migration alters after it created others, so the first process
  // stops there, half-way through its transaction
  const blocker = postgres(url, { max: 1, onnotice: () => {} });
  const watcher = postgres(url, { max: 1, onnotice: () => {} });
  const conn = await blocker.reserve();
  try {
    await conn`BEGIN`;
    await conn`LOCK TABLE video_jobs IN ACCESS EXCLUSIVE MODE`;
    const first = cli(["migrate"], url);
    const waitingOn = async (pattern: string) => {
      for (let i = 0; i < 600; i++) {
        const r = await watcher`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'reelay' AND wait_event_type = 'Lock' AND query LIKE ${pattern}`;
        if (r[0]!.n > 0) return;
        await Bun.sleep(50);
      }
      throw new Error(`no reelay process waits on ${pattern}`);
    };
    await waitingOn('ALTER TABLE "video_jobs"%');
    const [done] = await watcher`SELECT count(*)::int AS n FROM reelay_migrations`;
    expect(done!.n).toBe(n + 1); // nothing of the set is visible: it is all in the open transaction
    const second = cli(["migrate"], url);
    await waitingOn("%pg_advisory_xact_lock%");
    first.kill(9);
    await first.exited;
    await conn`ROLLBACK`;
    const [out, code] = await Promise.all([new Response(second.stdout).text(), second.exited]);
    expect(code).toBe(0);
    expect(appliedIn(out).sort()).toEqual(ALL.slice(n + 1).sort());
    expect(await recorded(url)).toEqual([...ALL].sort());
  } finally {
    conn.release();
    await blocker.end();
    await watcher.end();
  }
}, 120_000);
