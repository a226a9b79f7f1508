/** Runs `bun src/main.ts serve` as a child process (for kill -9 and multi-instance tests and the bench). */
import { createServer } from "node:net";
import { join } from "node:path";
import { ADMIN_TOKEN } from "../support/harness.ts";

const ROOT = join(import.meta.dir, "../..");

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
    srv.on("error", reject);
  });
}

export interface ChildServer {
  url: string;
  pid: number;
  proc: ReturnType<typeof Bun.spawn>;
  admin(path: string, body?: unknown): Promise<Response>;
  kill9(): Promise<void>;
  stop(): Promise<void>;
}

export async function spawnServer(env: Record<string, string>): Promise<ChildServer> {
  const port = await freePort();
  const proc = Bun.spawn(["bun", "src/main.ts", "serve"], {
    cwd: ROOT,
    env: { ...process.env, HOST: "127.0.0.1", PORT: String(port), REELAY_ADMIN_TOKEN: ADMIN_TOKEN, REELAY_LOG_LEVEL: "warn", REELAY_LOG_FORMAT: "json", REELAY_RATE_RPM: "0", ...env },
    stdout: "ignore",
    stderr: "inherit",
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`server exited with ${proc.exitCode} during boot`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {}
    if (Date.now() > deadline) throw new Error("server did not come up in 30 s");
    await Bun.sleep(100);
  }
  return {
    url,
    pid: proc.pid,
    proc,
    admin: (path, body) => fetch(url + path, { method: body ? "POST" : "GET", headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: body ? JSON.stringify(body) : undefined }),
    async kill9() {
      proc.kill(9);
      await proc.exited;
    },
    async stop() {
      if (proc.exitCode !== null) return;
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

export async function newClientOn(server: Pick<ChildServer, "admin">, credits: number, limits: Record<string, number> = {}) {
  const acct = (await (await server.admin("/admin/accounts", { name: "t", credits })).json()) as { id: string };
  const key = (await (await server.admin(`/admin/accounts/${acct.id}/keys`, { name: "k", ...limits })).json()) as { key: string };
  return { accountId: acct.id, key: key.key };
}
