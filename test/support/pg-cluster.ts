/**
 * A throwaway PostgreSQL cluster this test owns: initdb into a temp directory, started on a free
 * port (checked to be our own postmaster by its data directory), stopped and started at will to
 * simulate outages. As root (CI here), the server binaries run as the `postgres` user.
 *
 *   const pg = await startPgCluster();
 *   pg.url("reelay")            // postgres://postgres@127.0.0.1:<port>/reelay (created on first use of createDatabase)
 *   await pg.stop("fast")        // returns how long pg_ctl took, ms
 *   await pg.start()
 *   await pg.destroy()
 */
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { freePort } from "./harness.ts";

export interface PgCluster {
  port: number;
  dir: string;
  url(database?: string): string;
  createDatabase(name: string): Promise<string>;
  start(): Promise<number>;
  stop(mode?: "fast" | "immediate"): Promise<number>;
  destroy(): Promise<void>;
}

function binDir(): string {
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, "bin", "pg_ctl"))).sort((a, b) => Number(b) - Number(a)) : [];
  if (!versions.length) throw new Error("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (apt-get install postgresql)");
  return join(root, versions[0]!, "bin");
}

const asPostgres = process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--"] : [];

function run(cmd: string[]): { code: number; out: string } {
  const r = Bun.spawnSync([...asPostgres, ...cmd], { stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString() + r.stderr.toString() };
}

export async function startPgCluster(): Promise<PgCluster> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), "reelay-pg-"));
  const data = join(dir, "data");
  if (asPostgres.length) {
    const pw = Bun.spawnSync(["id", "-u", "postgres"]).stdout.toString().trim();
    const gid = Bun.spawnSync(["id", "-g", "postgres"]).stdout.toString().trim();
    chownSync(dir, Number(pw), Number(gid));
  }
  chmodSync(dir, 0o700);
  const init = run([join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"]);
  if (init.code !== 0) throw new Error(`initdb failed: ${init.out}`);
  const port = freePort();
  const url = (database = "postgres") => `postgres://postgres@127.0.0.1:${port}/${database}`;

  const start = async () => {
    const t = performance.now();
    // fsync off: a test cluster, thrown away
    const r = run([join(bin, "pg_ctl"), "-D", data, "-l", join(dir, "log"), "-w", "-t", "30", "-o", `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`, "start"]);
    if (r.code !== 0) throw new Error(`pg_ctl start failed: ${r.out}`);
    return performance.now() - t;
  };
  await start();
  // our own postmaster, not something else that took the port
  const check = postgres(url(), { max: 1, onnotice: () => {} });
  const [{ setting }] = await check`SELECT setting FROM pg_settings WHERE name = 'data_directory'`;
  await check.end();
  if (setting !== data) throw new Error(`port ${port} is served by another PostgreSQL (${setting})`);

  return {
    port,
    dir,
    url,
    async createDatabase(name) {
      const admin = postgres(url(), { max: 1, onnotice: () => {} });
      await admin.unsafe(`CREATE DATABASE ${name}`);
      await admin.end();
      return url(name);
    },
    start,
    async stop(mode = "fast") {
      const t = performance.now();
      const r = run([join(bin, "pg_ctl"), "-D", data, "-m", mode, "-w", "-t", "60", "stop"]);
      if (r.code !== 0) throw new Error(`pg_ctl stop failed: ${r.out}`);
      return performance.now() - t;
    },
    async destroy() {
      run([join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
