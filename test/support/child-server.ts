/**
 * `bun src/main.ts serve` as a child process, for what an in-process server cannot show: kill -9,
 * SIGTERM, several instances on one database or one Redis, and the log lines on stdout.
 */
import type { Subprocess } from "bun";
import { ADMIN_TOKEN, freePort, waitForOwnListener } from "./harness.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

export interface ChildServer {
  url: string;
  pid: number;
  proc: Subprocess<"ignore", "pipe", "pipe">;
  /** everything the process wrote to stdout so far */
  stdout(): string;
  /** stdout parsed as JSON lines (lines that are not JSON are skipped) */
  logLines(): Array<Record<string, unknown>>;
  admin(path: string, init?: { method?: string; body?: unknown }): Promise<Response>;
  kill9(): Promise<void>;
  /** SIGTERM, then SIGKILL after 10 s */
  stop(): Promise<void>;
}

/**
 * Defaults: JSON logs at info, no external plugins, no request-rate limit (tests that need one set it).
 * `port`: a port chosen beforehand (a restart on the same port, or a REELAY_PUBLIC_URL set before the spawn).
 * `bunArgs`: flags for bun itself (a benchmark's `--cpu-prof`; the profile is written when the server exits on SIGTERM).
 */
export async function spawnServer(env: Record<string, string>, opts: { port?: number; bunArgs?: string[] } = {}): Promise<ChildServer> {
  const port = opts.port ?? freePort();
  const proc: Subprocess<"ignore", "pipe", "pipe"> = Bun.spawn(["bun", ...(opts.bunArgs ?? []), "src/main.ts", "serve"], {
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
      REELAY_RATE_RPM: "0",
      // npm test runs three shards at once, each starting servers: 8 connections each keeps the
      // sum well under PostgreSQL's default max_connections (100); production defaults to 20
      REELAY_DB_POOL_SIZE: "8",
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
  const pumps = Promise.all([pump(proc.stdout, (s) => (out += s)), pump(proc.stderr, (s) => (err += s))]).catch(() => {});
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForOwnListener(proc, port, () => out + err, 60_000);
  } catch (e) {
    proc.kill(9);
    throw e;
  }
  return {
    url,
    pid: proc.pid,
    proc,
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
    async kill9() {
      proc.kill(9);
      await proc.exited;
      await pumps;
    },
    async stop() {
      if (proc.exitCode === null) {
        proc.kill("SIGTERM");
        const killer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
        await proc.exited;
        clearTimeout(killer);
      }
      await pumps;
    },
  };
}

/** A funded account and a key through the admin API of `server`. */
export async function newClientOn(server: Pick<ChildServer, "admin">, credits = 10_000_000, limits: Record<string, number> = {}) {
  const acct = (await (await server.admin("/admin/accounts", { body: { name: "child-test", credits } })).json()) as { id: string };
  const res = await server.admin(`/admin/accounts/${acct.id}/keys`, { body: { name: "k", ...limits } });
  const body = (await res.json()) as { key: string; id: string; prefix: string };
  if (res.status !== 201) throw new Error(`key creation failed: ${JSON.stringify(body)}`);
  return { accountId: acct.id, key: body.key, keyId: body.id, prefix: body.prefix };
}
