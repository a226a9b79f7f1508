/**
 * A stop always ends the process.
 *
 * - `reelay serve | cut -c1-80`, then `cut` goes away and the server gets SIGINT (Ctrl-C kills the
 *   reader first): the log line about the signal meets a closed pipe. The server used to stop
 *   listening and then hang for good in pino's exit hook (sonic-boom retries a write that fails
 *   with EPIPE forever, synchronously: later signals were ignored too). Now it exits 0, from the
 *   source and from the compiled binary.
 * - A step of the stop that never finishes (here a plugin whose `close` never returns) ends after
 *   the grace period and the time given to close after it: exit status 1, saying so.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SHUTDOWN_CLOSE_MS } from "../../src/boot.ts";
import { ADMIN_TOKEN, compiledBinary, createTestDatabase, dropDatabase, freePort } from "../support/harness.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), "reelay-stdout-"));
// the stuck stop runs on PostgreSQL; the piped servers on the embedded default, PGlite, as `reelay
// serve` on a fresh clone does (and as the hang was seen: with PostgreSQL's slower close, pino's
// error handler sometimes ran before the exit hook and hid it)
let databaseUrl = "";
beforeAll(async () => void (databaseUrl = await createTestDatabase()));
afterAll(async () => {
  rmSync(work, { recursive: true, force: true });
  await dropDatabase(databaseUrl);
});

const env = (port: number, extra: Record<string, string> = {}) => ({
  PATH: process.env.PATH ?? "",
  HOME: work,
  HOST: "127.0.0.1",
  PORT: String(port),
  REELAY_ADMIN_TOKEN: ADMIN_TOKEN,
  REELAY_LOG_FORMAT: "json",
  REELAY_PLUGINS_DIR: "/nonexistent-reelay-plugins",
  ...extra,
});

async function ready(port: number, proc: { exitCode: number | null }) {
  for (const end = Date.now() + 90_000; Date.now() < end && proc.exitCode === null; await Bun.sleep(100)) {
    if ((await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => null))?.status === 200) return;
  }
  throw new Error(`the server on ${port} never got ready`);
}

/** the exit code, or "still running" if it has not exited within `ms` (then it is killed) */
async function exitWithin(proc: { exited: Promise<number>; kill(s?: number | NodeJS.Signals): void }, ms: number): Promise<number | "still running"> {
  const timer = new Promise<"still running">((r) => setTimeout(() => r("still running"), ms));
  const result = await Promise.race([proc.exited, timer]);
  if (result === "still running") proc.kill("SIGKILL");
  return result;
}

/** `<server> serve | cut -c1-80`: two processes joined by a FIFO, as a shell pipeline joins them */
async function pipedToCut(name: string, server: string[]) {
  const dir = join(work, name);
  mkdirSync(dir);
  const fifo = join(dir, "stdout");
  expect(Bun.spawnSync(["mkfifo", fifo]).exitCode).toBe(0);
  const cut = Bun.spawn(["bash", "-c", `exec cut -c1-80 < ${fifo} > ${join(dir, "cut.out")}`], { stdin: "ignore" });
  const port = freePort();
  const quoted = server.map((a) => `'${a}'`).join(" ");
  // a migrated data dir from the binary's embedded seed: under `bun` a fresh one is initdb, ~15 s
  expect(Bun.spawnSync([compiledBinary(), "migrate"], { env: env(0, { REELAY_DATA_DIR: join(dir, "data") }) }).exitCode).toBe(0);
  const proc = Bun.spawn(["bash", "-c", `exec ${quoted} serve > ${fifo}`], { cwd: dir, env: env(port, { REELAY_DATA_DIR: join(dir, "data") }), stdin: "ignore", stderr: "pipe" });
  await ready(port, proc);
  return { cut, proc, port };
}

for (const [name, server] of [["source", ["bun", join(ROOT, "src/main.ts")]], ["binary", [compiledBinary()]]] as const) {
  test(`${name}: with stdout's reader gone, SIGINT still ends the server (exit 0)`, async () => {
    const { cut, proc, port } = await pipedToCut(name, [...server]);
    cut.kill("SIGTERM");
    await cut.exited;
    proc.kill("SIGINT"); // no request in between: the signal's own log line is the first to meet the closed pipe
    expect(await exitWithin(proc, 30_000)).toBe(0);
    expect(await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => "refused")).toBe("refused");
    expect(await new Response(proc.stderr).text()).toBe("");
  }, 150_000);
}

test("a stop with a step that never finishes ends after the grace period and the time to close, with status 1", async () => {
  const dir = join(work, "stuck");
  mkdirSync(join(dir, "plugins"), { recursive: true });
  writeFileSync(join(dir, "plugins/index.mjs"), `export { default } from ${JSON.stringify(join(ROOT, "test/plugins/stuck-close.ts"))};\n`);
  const port = freePort();
  const logFile = join(dir, "out.log");
  const proc = Bun.spawn(["bun", join(ROOT, "src/main.ts"), "serve"], {
    cwd: dir,
    env: env(port, { DATABASE_URL: databaseUrl, REELAY_DATA_DIR: join(dir, "data"), REELAY_PLUGINS_DIR: join(dir, "plugins"), REELAY_SHUTDOWN_GRACE_MS: "200" }),
    stdin: "ignore",
    stdout: Bun.file(logFile),
  });
  await ready(port, proc);
  proc.kill("SIGTERM");
  expect(await exitWithin(proc, 200 + SHUTDOWN_CLOSE_MS + 20_000)).toBe(1);
  const lines = readFileSync(logFile, "utf8").trim().split("\n").map((l) => JSON.parse(l) as { msg: string; afterMs?: number });
  expect(lines.find((l) => l.msg.startsWith("shutdown did not finish"))).toMatchObject({ afterMs: 200 + SHUTDOWN_CLOSE_MS });
  expect(lines.some((l) => l.msg === "stopped")).toBe(false);
}, 150_000);
