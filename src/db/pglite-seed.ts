/**
 * A fresh PGlite data directory without the slow first boot: `initdb` in WASM took ~2.2 s and
 * 900 MB of RSS here (PGlite 0.5 runs it in a second Postgres instance). compile.sh instead runs
 * initdb and every migration once, at build time, and ships the result as a gzipped tarball in the
 * binary (`dist/pglite-seed.tar.gz`, an extra file of `bun build --compile`); a fresh data dir is
 * unpacked from it with Bun's native tar (PGlite's own `loadDataDir` writes file by file through
 * the WASM filesystem layer: 1.5–2.5 s here for the 39 MB dir). Migrations still run after
 * unpacking, so a binary whose seed is
 * older than its migrations only applies the difference. Under `bun run` (no binary) there is no
 * seed and PGlite runs initdb as before.
 */
import { PGlite } from "@electric-sql/pglite";
import { readdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";

/** the tarball embedded by compile.sh, if this is the compiled binary */
export function embeddedSeed(): Blob | null {
  // embedded files are named with a content hash before the last extension: pglite-seed.tar-1a2b3c4d.gz
  return Bun.embeddedFiles.find((f) => /^pglite-seed\.tar(-\w+)?\.gz$/.test((f as Blob & { name: string }).name)) ?? null;
}

/** initdb + every migration in memory, dumped as the tarball PGlite's `loadDataDir` takes */
export async function buildSeed(migrate: (client: PGlite) => Promise<string[]>): Promise<{ tarball: Blob; migrations: string[] }> {
  const client = await PGlite.create();
  try {
    const migrations = await migrate(client);
    // a clean shutdown checkpoint, so the unpacked copy starts without WAL replay
    await client.exec("CHECKPOINT");
    return { tarball: await client.dumpDataDir("gzip"), migrations };
  } finally {
    await client.close();
  }
}

/**
 * Unpack `seed` into `dataDir` (which may already hold reelay's pid file): extracted into a
 * scratch folder inside it, then moved in, PG_VERSION last: it is what marks a data dir as
 * initialised, so a crash half-way leaves a dir that is unpacked again.
 */
export async function unpackSeed(seed: Blob, dataDir: string): Promise<void> {
  const scratch = join(dataDir, `.seed-${process.pid}`);
  rmSync(scratch, { recursive: true, force: true });
  try {
    await new Bun.Archive(await seed.bytes()).extract(scratch);
    // PGlite's dumps name entries from the data dir's root ("/PG_VERSION", "/base/…"); a tarball
    // made with a top folder works too
    const top = readdirSync(scratch);
    const from = top.includes("PG_VERSION") ? scratch : top.length === 1 ? join(scratch, top[0]!) : null;
    if (!from || !readdirSync(from).includes("PG_VERSION")) throw new Error("the PGlite seed holds no data directory (no PG_VERSION)");
    const entries = readdirSync(from).sort((a, b) => Number(a === "PG_VERSION") - Number(b === "PG_VERSION"));
    for (const name of entries) {
      rmSync(join(dataDir, name), { recursive: true, force: true });
      renameSync(join(from, name), join(dataDir, name));
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
