/**
 * `reelay backup <dir>`: a copy of the database in <dir> (docs/operations.md "Backups").
 *  - PostgreSQL: `pg_dump --format=custom` of DATABASE_URL (one consistent snapshot while the
 *    servers run); restore with `pg_restore --no-owner -d <empty database> <file>`.
 *  - PGlite: the data directory belongs to the running server, so the copy is asked of it
 *    (POST /admin/backup on PORT, with REELAY_ADMIN_TOKEN); when no server runs, the CLI opens the
 *    directory itself. Restore: unpack the tarball into an empty directory, point REELAY_DATA_DIR at it.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "../config.ts";
import { lockDataDir } from "../db/data-dir-lock.ts";
import { openDatabase } from "../db/index.ts";

const stamp = () => new Date().toISOString().replace(/[:.]/g, "-");

export async function backup(config: Config, dir: string | undefined): Promise<{ file: string; database: "postgres" | "pglite"; bytes: number; via?: string }> {
  if (!dir) throw Object.assign(new Error("backup needs a directory: reelay backup <dir>"), { name: "UsageError" });
  mkdirSync(dir, { recursive: true });
  if (config.databaseUrl) {
    const file = join(dir, `reelay-${stamp()}.dump`);
    const p = Bun.spawn(["pg_dump", "--format=custom", "--no-owner", "--file", file, config.databaseUrl], { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
    const [err, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
    if (code !== 0) throw new Error(`pg_dump failed (exit ${code}): ${err.trim()}`);
    return { file, database: "postgres", bytes: Bun.file(file).size };
  }
  const file = join(dir, `reelay-pglite-${stamp()}.tar.gz`);
  const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
  const server = `http://${host.includes(":") ? `[${host}]` : host}:${config.port}`;
  const res = await fetch(server + "/admin/backup", { method: "POST", headers: { authorization: `Bearer ${config.adminToken ?? ""}` } }).catch(() => null);
  if (res?.status === 200) {
    await Bun.write(file, res);
    return { file, database: "pglite", bytes: Bun.file(file).size, via: server };
  }
  if (res) throw new Error(`the server on ${server} refused the backup: ${res.status} ${(await res.text()).slice(0, 300)}`);
  // no server: the data directory is ours (the lock says so if a server does hold it)
  const unlock = lockDataDir(config.dataDir);
  try {
    const database = await openDatabase({ databaseUrl: null, dataDir: config.dataDir, seed: null });
    try {
      await Bun.write(file, await database.dump!());
    } finally {
      await database.close();
    }
  } finally {
    unlock();
  }
  return { file, database: "pglite", bytes: Bun.file(file).size };
}
