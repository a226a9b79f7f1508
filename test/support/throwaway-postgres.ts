/**
 * A PostgreSQL cluster of the test's own, on a free port, that the test can stop and start (database
 * outages). Uses initdb / pg_ctl of the installed server (as the `postgres` user when run as root).
 */
import { chmodSync, chownSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./harness.ts";

export interface ThrowawayPostgres {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  port: number;
  /** the cluster's data directory (postmaster.pid: the server's pid on its first line) */
  dataDir: string;
  /** pg_ctl stop -m fast: connections are closed, new ones refused */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** stop and delete the cluster */
  destroy(): Promise<void>;
}

function pgBin(): string {
  const versions = readdirSync("/usr/lib/postgresql").filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
  if (!versions[0]) throw new Error("no PostgreSQL server binaries under /usr/lib/postgresql");
  return `/usr/lib/postgresql/${versions[0]}/bin`;
}

async function run(args: string[]): Promise<string> {
  // initdb and postgres refuse to run as root
  const cmd = process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", ...args] : args;
  const p = Bun.spawn(cmd, { stdout: "pipe", stderr: "pipe", cwd: "/tmp" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${args.join(" ")} exited with ${code}:\n${out}\n${err}`);
  return out;
}

export async function startThrowawayPostgres(): Promise<ThrowawayPostgres> {
  const bin = pgBin();
  const dir = mkdtempSync(join(tmpdir(), "reelay-pg-"));
  if (process.getuid?.() === 0) {
    const { uid, gid } = await (async () => {
      const line = (await Bun.file("/etc/passwd").text()).split("\n").find((l) => l.startsWith("postgres:"));
      if (!line) throw new Error("no postgres user to run initdb as");
      const f = line.split(":");
      return { uid: Number(f[2]), gid: Number(f[3]) };
    })();
    chownSync(dir, uid, gid);
  }
  chmodSync(dir, 0o700);
  const data = join(dir, "data");
  await run([`${bin}/initdb`, "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"]);
  const port = freePort();
  const opts = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c fsync=off -c synchronous_commit=off -c max_connections=60`;
  const start = () => run([`${bin}/pg_ctl`, "-D", data, "-o", opts, "-l", join(dir, "log"), "-w", "-t", "60", "start"]).then(() => {});
  const stop = () => run([`${bin}/pg_ctl`, "-D", data, "-m", "fast", "-w", "-t", "60", "stop"]).then(() => {});
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dataDir: data,
    start,
    stop,
    async destroy() {
      await stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
