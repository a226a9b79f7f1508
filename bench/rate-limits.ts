/**
 * What the ops request hooks and the rate limiter cost per request, on an authenticated
 * GET /v1/models at 32 connections (wrk, 2 threads), in one run:
 *   bun bench/rate-limits.ts [seconds per row, default 5]
 * Needs Postgres (DATABASE_URL, default the local `test` database: a fresh database is created and
 * dropped) and Redis (REDIS_URL, default redis://127.0.0.1:6379) and `wrk` on PATH.
 *
 * Rows: "no ops hooks" is the app without createOps' hooks (no limit, log line or metrics);
 * "limits off" has the hooks with REELAY_RATE_RPM=0 (log line + metrics, no limiter call);
 * then the in-process and the Redis limiter, each counting every request against the key's and
 * the account's bucket (limit high enough never to refuse). Request logs go to /dev/null at info
 * level, so their serialization is in the measurement.
 */
import pino from "pino";
import { createApp } from "../src/app.ts";
import { buildDeps, startServer } from "../src/boot.ts";
import { createLogger } from "../src/logger.ts";
import { createTestDatabase, dropDatabase, testConfig, ADMIN_TOKEN } from "../test/support/harness.ts";

const seconds = Number(process.argv[2] ?? 5);
const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const CONNECTIONS = 32;

interface Target {
  url: string;
  stop(): Promise<void>;
}

const logger = () => createLogger({ logLevel: "info", logPretty: false }, pino.destination({ dest: "/dev/null", sync: false }) as unknown as NodeJS.WritableStream);

async function withoutHooks(databaseUrl: string): Promise<Target> {
  const config = testConfig({ DATABASE_URL: databaseUrl });
  const deps = await buildDeps(config, logger());
  const app = createApp(deps);
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => app.handle(req) });
  return {
    url: `http://127.0.0.1:${server.port}`,
    async stop() {
      await server.stop(true);
      await deps.registry.close();
      await deps.database.close();
    },
  };
}

async function withHooks(databaseUrl: string, env: Record<string, string>): Promise<Target> {
  const running = await startServer(testConfig({ DATABASE_URL: databaseUrl, ...env }), { logger: logger() });
  return { url: running.url!.replace("0.0.0.0", "127.0.0.1"), stop: () => running.stop() };
}

const toMs = (v: string, unit: string) => Number(v) * ({ us: 0.001, ms: 1, s: 1000 } as Record<string, number>)[unit]!;

async function wrk(url: string, key: string, secs: number) {
  const p = Bun.spawn(["wrk", "-t2", `-c${CONNECTIONS}`, `-d${secs}s`, "--latency", "-H", `Authorization: Bearer ${key}`, `${url}/v1/models`], { stdout: "pipe", stderr: "pipe" });
  const out = await new Response(p.stdout).text();
  if ((await p.exited) !== 0) throw new Error(`wrk failed: ${await new Response(p.stderr).text()}`);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const pct = (p: string) => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s)$`, "m").exec(out);
    return m ? toMs(m[1]!, m[2]!) : NaN;
  };
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  return { rps, p50: pct("50"), p99: pct("99"), non2xx };
}

const databaseUrl = await createTestDatabase();
const rows: Record<string, string | number>[] = [];
try {
  // one account and key for every row (rows share the database); no per-key override, so REELAY_RATE_RPM applies
  const setup = await withHooks(databaseUrl, {});
  const admin = (path: string, body: unknown) =>
    fetch(setup.url + path, { method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<Record<string, string>>);
  const account = await admin("/admin/accounts", { name: "bench", credits: 1_000_000 });
  const { key } = await admin(`/admin/accounts/${account.id}/keys`, { name: "bench" });
  await setup.stop();

  const high = String(1_000_000_000);
  const variants: Array<[string, () => Promise<Target>]> = [
    ["no ops hooks", () => withoutHooks(databaseUrl)],
    ["hooks, limits off", () => withHooks(databaseUrl, { REELAY_RATE_RPM: "0" })],
    ["in-process limiter", () => withHooks(databaseUrl, { REELAY_RATE_RPM: high })],
    ["Redis limiter", () => withHooks(databaseUrl, { REELAY_RATE_RPM: high, REDIS_URL: redisUrl })],
  ];
  for (const [name, start] of variants) {
    const target = await start();
    try {
      await Bun.sleep(300); // let the Redis client connect
      await wrk(target.url, key!, 1); // warm-up: JIT, key cache, connections
      const r = await wrk(target.url, key!, seconds);
      rows.push({ variant: name, "req/s": Math.round(r.rps), "p50 ms": r.p50.toFixed(2), "p99 ms": r.p99.toFixed(2), "non-2xx": r.non2xx });
    } finally {
      await target.stop();
    }
  }
} finally {
  await dropDatabase(databaseUrl);
}

const base = Number(rows[0]?.["req/s"]);
for (const r of rows) r["vs no hooks"] = `${((Number(r["req/s"]) / base) * 100).toFixed(0)}%`;
console.log(`GET /v1/models (authenticated), wrk -t2 -c${CONNECTIONS}, ${seconds} s per row, Bun ${Bun.version}, ${navigator.hardwareConcurrency} cores shared with wrk`);
console.table(rows);
process.exit(0);
