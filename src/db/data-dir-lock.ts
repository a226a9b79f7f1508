/**
 * PGlite is a single-process database: two processes opening one data directory would corrupt it.
 * A pid file guards the directory; a stale file (its process gone) is taken over.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, "reelay.pid");
  let holder: number | null = null;
  try {
    holder = Number(readFileSync(file, "utf8").trim()) || null;
  } catch {}
  if (holder && holder !== process.pid && alive(holder)) {
    throw new Error(`the data directory ${dataDir} is in use by process ${holder} (embedded PGlite allows one process); stop it, or use the admin HTTP API of the running server`);
  }
  writeFileSync(file, String(process.pid));
  return () => rmSync(file, { force: true });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}
