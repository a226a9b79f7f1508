/**
 * The suite's preflight (bunfig.toml preload): a machine without PostgreSQL or Redis gets one line
 * naming what is missing and the command that starts it, instead of connection errors deep inside
 * the first test files. compose.yaml provides exactly the services the suite's defaults expect.
 */
import { expect, test } from "bun:test";
import YAML from "yaml";
import { freePort } from "./harness.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const PREFLIGHT = new URL("./preflight.ts", import.meta.url).pathname;

async function preflight(env: Record<string, string>) {
  const proc = Bun.spawn(["bun", PREFLIGHT], { env: { PATH: process.env.PATH ?? "", ...env }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, lines: (out + err).trim().split("\n").filter(Boolean) };
}

const realPg = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const realRedis = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

test("with both services up the preflight is silent", async () => {
  expect(await preflight({ DATABASE_URL: realPg, REDIS_URL: realRedis })).toEqual({ code: 0, lines: [] });
});

test("neither PostgreSQL nor Redis: one line, one command", async () => {
  const [pg, redis] = [freePort(), freePort()]; // nothing listens there
  expect(await preflight({ DATABASE_URL: `postgres://postgres@127.0.0.1:${pg}/test`, REDIS_URL: `redis://127.0.0.1:${redis}` })).toEqual({
    code: 1,
    lines: [`reelay tests: PostgreSQL (127.0.0.1:${pg}, DATABASE_URL) and Redis (127.0.0.1:${redis}, REDIS_URL) are not reachable — start both: docker compose up -d`],
  });
});

test("only one missing: the line names it and its own command", async () => {
  const port = freePort();
  const noRedis = await preflight({ DATABASE_URL: realPg, REDIS_URL: `redis://127.0.0.1:${port}` });
  expect(noRedis).toEqual({ code: 1, lines: [`reelay tests: Redis is not reachable at 127.0.0.1:${port} (REDIS_URL; ECONNREFUSED) — start it: docker compose up -d redis`] });
  const noPg = await preflight({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/test`, REDIS_URL: realRedis });
  expect(noPg).toEqual({ code: 1, lines: [`reelay tests: PostgreSQL is not reachable at 127.0.0.1:${port} (DATABASE_URL; ECONNREFUSED) — start it: docker compose up -d postgres`] });
  const url = new URL(realPg);
  url.pathname = "/no_such_db_for_preflight";
  expect((await preflight({ DATABASE_URL: url.toString(), REDIS_URL: realRedis })).lines).toEqual([
    `reelay tests: PostgreSQL at ${url.hostname}:${url.port} has no database "no_such_db_for_preflight" (DATABASE_URL) — create it: createdb -h ${url.hostname} -U postgres no_such_db_for_preflight`,
  ]);
});

test("compose.yaml starts what the suite's defaults expect, on loopback only", async () => {
  const compose = YAML.parse(await Bun.file(ROOT + "compose.yaml").text());
  expect(compose.services.postgres.ports).toEqual(["127.0.0.1:5432:5432"]);
  expect(compose.services.postgres.environment).toMatchObject({ POSTGRES_USER: "postgres", POSTGRES_DB: "test", POSTGRES_HOST_AUTH_METHOD: "trust" });
  expect(compose.services.redis.ports).toEqual(["127.0.0.1:6379:6379"]);
});
