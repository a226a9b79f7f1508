/**
 * PostgreSQL not reachable when reelay starts (compose starting both at once; a database too busy
 * to finish a connection's startup within connect_timeout — a CI boot exited with
 * CONNECT_TIMEOUT): reelay listens, says not ready, tries again for REELAY_DB_BOOT_WAIT_SECONDS
 * and serves once the database answers; past the wait it exits with the connection error. On a
 * cluster this test owns, stopped and started at will.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startServer, type Running } from "../../src/boot.ts";
import { listen } from "../../src/listen.ts";
import { createLogger } from "../../src/logger.ts";
import { ADMIN_TOKEN, testConfig } from "../support/harness.ts";
import { startPgCluster, type PgCluster } from "../support/pg-cluster.ts";

let pg: PgCluster;
let databaseUrl: string;

beforeAll(async () => {
  pg = await startPgCluster();
  databaseUrl = await pg.createDatabase("reelay_boot");
  await pg.stop("fast");
});

afterAll(async () => {
  await pg?.destroy();
});

function capturingLogger(config: ReturnType<typeof testConfig>) {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({ ...config, logLevel: "info" }, { write: (s: string) => void s.split("\n").filter(Boolean).forEach((l) => lines.push(JSON.parse(l))) } as unknown as NodeJS.WritableStream);
  return { lines, logger };
}

const retries = (lines: Array<Record<string, unknown>>) => lines.filter((l) => l.msg === "the database cannot be reached yet; trying again");

test("the database comes up after reelay: /readyz says 503 while it waits, then it migrates and serves", async () => {
  const config = testConfig({ DATABASE_URL: databaseUrl, REELAY_DB_BOOT_WAIT_SECONDS: "60" });
  const { lines, logger } = capturingLogger(config);
  const listener = listen(config, logger);
  const base = listener.server.url.href.replace(/\/$/, "");
  const booting = startServer(config, { logger, listener });
  let running: Running | undefined;
  try {
    // two tries refused (the cluster is down), the boot still going
    while (retries(lines).length < 2) await Bun.sleep(20);
    expect(retries(lines)[0]).toMatchObject({ what: "migrations", attempt: 1, err: { code: "ECONNREFUSED" } });
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    await pg.start();
    running = await booting;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const res = await fetch(`${base}/admin/accounts`, { method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ name: "after the wait", amount: 1_000 }) });
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ name: "after the wait", balance: 1_000 });
  } finally {
    if (running) await running.stop();
    else await booting.then((r) => r.stop(), () => listener.server.stop(true));
    await pg.stop("fast");
  }
}, 120_000);

test("past REELAY_DB_BOOT_WAIT_SECONDS the boot fails with the connection error; any other database error is not waited for", async () => {
  const config = testConfig({ DATABASE_URL: databaseUrl, REELAY_DB_BOOT_WAIT_SECONDS: "1" });
  const { lines, logger } = capturingLogger(config);
  const err = await startServer(config, { logger, listen: false }).then(() => null, (e: unknown) => e as { code?: string });
  expect(err?.code).toBe("ECONNREFUSED");
  expect(retries(lines).length).toBeGreaterThanOrEqual(1);

  // a database that answers "no such database" is a mistake to report at once, not an outage
  await pg.start();
  const wrong = testConfig({ DATABASE_URL: pg.url("no_such_database"), REELAY_DB_BOOT_WAIT_SECONDS: "60" });
  const w = capturingLogger(wrong);
  const err2 = await startServer(wrong, { logger: w.logger, listen: false }).then(() => null, (e: unknown) => e as { code?: string });
  expect(err2?.code).toBe("3D000");
  expect(retries(w.lines)).toEqual([]);
}, 120_000);
