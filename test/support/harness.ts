/**
 * Test harness: a fresh Postgres database per test file (created from DATABASE_URL, default the
 * local server's `test` database), the real app served on a random port, and helpers to create
 * funded accounts and keys through the admin API, as an operator would.
 */
import { rmSync } from "node:fs";
import postgres from "postgres";
import { createApp } from "../../src/app.ts";
import { startServer, type Running } from "../../src/boot.ts";
import { loadConfig, type Config } from "../../src/config.ts";
import { createLogger, type Logger } from "../../src/logger.ts";

export const ADMIN_TOKEN = "test-admin-token-0123456789";
const BASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** Create an empty database for this test file and return its URL; dropped by `dropDatabase`. */
export async function createTestDatabase(): Promise<string> {
  const name = `reelay_t_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = postgres(BASE_URL, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(BASE_URL);
  url.pathname = "/" + name;
  return url.toString();
}

export async function dropDatabase(url: string) {
  const name = new URL(url).pathname.slice(1);
  const admin = postgres(BASE_URL, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

export function testConfig(overrides: Record<string, string | undefined> = {}): Config {
  return loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    REELAY_ADMIN_TOKEN: ADMIN_TOKEN,
    REELAY_LOG_LEVEL: "error",
    REELAY_LOG_FORMAT: "json",
    REELAY_PLUGINS_DIR: "/nonexistent-reelay-plugins",
    // three test shards run at once (scripts/run-tests.ts), each with its own servers: see child-server.ts
    REELAY_DB_POOL_SIZE: "8",
    ...overrides,
  });
}

export interface TestServer extends Running {
  url: string;
  databaseUrl: string | null;
  admin(path: string, init?: { method?: string; body?: unknown }): Promise<Response>;
  /** a funded account and one key for it */
  newClient(opts?: { credits?: number; scopes?: string[]; models?: string[]; limits?: Record<string, number> }): Promise<{ accountId: string; key: string; keyId: string }>;
  close(): Promise<void>;
}

/** Start the real server on a random port against a fresh Postgres database (or PGlite if `pglite`). */
export async function startTestServer(env: Record<string, string | undefined> = {}, opts: { pglite?: boolean; logger?: Logger; clock?: () => number } = {}): Promise<TestServer> {
  const databaseUrl = opts.pglite ? null : await createTestDatabase();
  const dataDir = opts.pglite ? `/tmp/reelay-test-pglite-${Date.now()}-${Math.random().toString(36).slice(2)}` : undefined;
  const config = testConfig({ DATABASE_URL: databaseUrl ?? undefined, REELAY_DATA_DIR: dataDir, ...env });
  let running: Running;
  try {
    running = await startServer(config, { logger: opts.logger ?? createLogger(config), clock: opts.clock });
  } catch (e) {
    // a boot that failed leaves nothing listening: its database and data dir go with it
    if (databaseUrl) await dropDatabase(databaseUrl).catch(() => {});
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    throw e;
  }
  const url = running.url!.replace("0.0.0.0", "127.0.0.1");
  const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(url + path, {
      method: init.method ?? (init.body ? "POST" : "GET"),
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: init.body ? JSON.stringify(init.body) : undefined,
    });
  return {
    ...running,
    url,
    databaseUrl,
    admin,
    async newClient(o = {}) {
      const acct = (await (await admin("/admin/accounts", { body: { name: "test", credits: o.credits ?? 10_000_000 } })).json()) as { id: string };
      const res = await admin(`/admin/accounts/${acct.id}/keys`, { body: { name: "k", scopes: o.scopes, models: o.models, ...o.limits } });
      const key = (await res.json()) as { key: string; id: string };
      if (res.status !== 201) throw new Error(`key creation failed: ${JSON.stringify(key)}`);
      return { accountId: acct.id, key: key.key, keyId: key.id };
    },
    async close() {
      await running.stop();
      if (databaseUrl) await dropDatabase(databaseUrl);
      if (dataDir) rmSync(dataDir, { recursive: true, force: true }); // ~40 MB of PGlite per server
    },
  };
}

/** Build the app without listening (for tests that call app.handle directly). */
export { createApp };

/** The kernel's ephemeral range (outgoing connections and port-0 binds take ports from it). */
function ephemeralRange(): [number, number] {
  try {
    const [lo, hi] = require("node:fs").readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    if (lo > 0 && hi >= lo) return [lo, hi];
  } catch {}
  return [32768, 60999];
}

/**
 * A TCP port that was free a moment ago (for child processes that must be told their port; the
 * harness then checks the child logs its own pid listening on it). Taken at random BELOW the
 * kernel's ephemeral range: a port-0 bind hands out ports from that range, and so does every
 * outgoing connection, so a port freed there could be taken by another test's connection before
 * the child binds it (seen once npm test ran three shards at once: "port … is already in use").
 */
export function freePort(): number {
  const [ephemeralLow] = ephemeralRange();
  const low = 10_000, high = Math.max(low + 1_000, ephemeralLow - 1);
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    try {
      const s = Bun.serve({ port, hostname: "127.0.0.1", fetch: () => new Response() });
      s.stop(true);
      return port;
    } catch {
      // taken: try another
    }
  }
  throw new Error(`no free port found between ${low} and ${high}`);
}

/**
 * The base URL (with `path`) of a local port nothing listens on, so a connection to it is refused
 * at once: for a deployment that must fail to connect. Below 1024, where no test binds (port-0
 * binds and freePort() hand out ports from 10,000 up), so nothing starts listening there while the
 * test runs. A port freed by stopping a fake server is not that: it is in the ephemeral range, and
 * in a CI run another test's server took one and answered 401 (the "connection refused" test saw
 * upstream_auth_failed).
 */
export async function refusedUrl(path = "/v1"): Promise<string> {
  for (const port of [9, 1, 7, 11, 13, 15, 17, 19, 39, 49]) {
    const refused = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } }).then((s) => (s.end(), false), (e) => (e as { code?: string })?.code === "ECONNREFUSED");
    if (refused) return `http://127.0.0.1:${port}${path}`;
  }
  throw new Error("no refused port below 1024 on 127.0.0.1");
}

/**
 * Wait until the child `pid` logs "reelay listening" on `port` (the line carries its pid), then
 * until /readyz answers 200 (the port opens before the database; /healthz is 200 from the start): a fixed or reused port held by another process is never mistaken for
 * ours, and a child that exits (port taken, bad config) fails at once with its output.
 */
export async function waitForOwnListener(child: { pid: number; exitCode: number | null }, port: number, output: () => string, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  const listening = () =>
    output().split("\n").some((l) => {
      try {
        const j = JSON.parse(l) as { msg?: string; pid?: number; url?: string };
        return j.msg === "reelay listening" && j.pid === child.pid && new URL(j.url!).port === String(port);
      } catch {
        return false;
      }
    });
  while (!listening()) {
    if (child.exitCode !== null) throw new Error(`pid ${child.pid} exited with ${child.exitCode} before listening on ${port}:\n${output()}`);
    if (Date.now() > end) throw new Error(`pid ${child.pid} did not log "reelay listening" on port ${port} within ${timeoutMs} ms:\n${output()}`);
    await Bun.sleep(50);
  }
  // then ready: on a timeout, say what /readyz last answered and what the child printed
  let last = "no answer";
  while (Date.now() < end) {
    if (child.exitCode !== null) throw new Error(`pid ${child.pid} exited with ${child.exitCode} before it was ready:\n${output()}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`);
      if (res.status === 200) return;
      last = `${res.status} ${await res.text()}`;
    } catch (e) {
      last = String(e);
    }
    await Bun.sleep(100);
  }
  throw new Error(`pid ${child.pid} listened on ${port} but /readyz was not 200 within ${timeoutMs} ms (last: ${last}):\n${output()}`);
}

/** Wait until `url` answers 200, or throw after `timeoutMs`. */
export async function waitForOk(url: string, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    try {
      if ((await fetch(url)).status === 200) return;
    } catch {}
    await Bun.sleep(100);
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
}

/** dist/reelay, built by compile.sh if it is not there yet. */
export function compiledBinary(): string {
  const root = new URL("../..", import.meta.url).pathname;
  const bin = root + "dist/reelay";
  if (!require("node:fs").existsSync(bin)) {
    const r = Bun.spawnSync(["bash", root + "compile.sh"], { stdout: "inherit", stderr: "inherit" });
    if (r.exitCode !== 0) throw new Error("compile.sh failed");
  }
  return bin;
}
