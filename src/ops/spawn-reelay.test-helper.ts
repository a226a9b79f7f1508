/**
 * Test helpers for the ops suites: run `bun src/main.ts serve` as a child process (its stdout is
 * captured: the log lines), and a throwaway redis-server on a free port that a test may kill and
 * restart (the shared Redis on 6379 is never touched).
 */
import type { Subprocess } from "bun";
import { createServer } from "node:net";
import { ADMIN_TOKEN } from "../../test/support/harness.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface ReelayProcess {
  url: string;
  /** everything the process wrote to stdout so far */
  stdout(): string;
  /** stdout parsed as JSON lines (lines that are not JSON are skipped) */
  logLines(): Array<Record<string, unknown>>;
  admin(path: string, init?: { method?: string; body?: unknown }): Promise<Response>;
  stop(): Promise<void>;
}

export async function spawnReelay(env: Record<string, string>): Promise<ReelayProcess> {
  const port = await freePort();
  const child: Subprocess<"ignore", "pipe", "pipe"> = Bun.spawn(["bun", "src/main.ts", "serve"], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "/tmp",
      HOST: "127.0.0.1",
      PORT: String(port),
      REELAY_ADMIN_TOKEN: ADMIN_TOKEN,
      REELAY_LOG_FORMAT: "json",
      REELAY_LOG_LEVEL: "info",
      REELAY_PLUGINS_DIR: "/nonexistent-reelay-plugins",
      ...env,
    },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  let err = "";
  const pump = async (stream: ReadableStream<Uint8Array>, onText: (s: string) => void) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) onText(decoder.decode(chunk, { stream: true }));
  };
  const pumps = Promise.all([pump(child.stdout, (s) => (out += s)), pump(child.stderr, (s) => (err += s))]);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`reelay exited with ${child.exitCode} during boot:\n${out}\n${err}`);
    const ok = await fetch(url + "/healthz").then((r) => r.ok, () => false);
    if (ok) break;
    if (Date.now() > deadline) {
      child.kill();
      throw new Error(`reelay did not start within 30 s:\n${out}\n${err}`);
    }
    await Bun.sleep(50);
  }
  return {
    url,
    stdout: () => out,
    logLines: () =>
      out.split("\n").flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, unknown>];
        } catch {
          return [];
        }
      }),
    admin: (path, init = {}) =>
      fetch(url + path, {
        method: init.method ?? (init.body ? "POST" : "GET"),
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: init.body ? JSON.stringify(init.body) : undefined,
      }),
    async stop() {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        const killer = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await child.exited;
        clearTimeout(killer);
      }
      await pumps.catch(() => {});
    },
  };
}

/** A funded account and a key through the admin API of `server`. */
export async function createClient(admin: ReelayProcess["admin"], limits: Record<string, number> = {}) {
  const acct = (await (await admin("/admin/accounts", { body: { name: "ops-test", credits: 10_000_000 } })).json()) as { id: string };
  const res = await admin(`/admin/accounts/${acct.id}/keys`, { body: { name: "k", ...limits } });
  const body = (await res.json()) as { key: string; id: string; prefix: string };
  if (res.status !== 201) throw new Error(`key creation failed: ${JSON.stringify(body)}`);
  return { accountId: acct.id, key: body.key, keyId: body.id, prefix: body.prefix };
}

export interface ThrowawayRedis {
  url: string;
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
}

/** redis-server on a free port, no persistence; stop/start it to simulate an outage. */
export async function startThrowawayRedis(): Promise<ThrowawayRedis> {
  const port = await freePort();
  let proc: Subprocess | null = null;
  const start = async () => {
    proc = Bun.spawn(["redis-server", "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdout: "ignore", stderr: "ignore" });
    const deadline = Date.now() + 10_000;
    for (;;) {
      const up = await new Promise<boolean>((resolve) => {
        const s = Bun.connect({ hostname: "127.0.0.1", port, socket: { open: (sock) => { sock.end(); resolve(true); }, data() {}, error: () => resolve(false), connectError: () => resolve(false) } }).catch(() => resolve(false));
        void s;
      });
      if (up) return;
      if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not start`);
      await Bun.sleep(25);
    }
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    start,
    async stop() {
      const p = proc as Subprocess | null;
      if (!p) return;
      p.kill("SIGKILL");
      await p.exited;
      proc = null;
    },
  };
}
