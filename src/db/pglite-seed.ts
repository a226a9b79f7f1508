/**
 * A fresh PGlite data directory without the slow first boot: `initdb` in WASM took ~2.2 s and
 * 900 MB of RSS here (PGlite 0.5 runs it in a second Postgres instance). compile.sh instead runs
 * initdb and every migration once, at build time, and ships the result as a gzipped tarball in the
 * binary (`dist/pglite-seed.tar.gz`, an extra file of `bun build --compile`); a fresh data dir is
 * unpacked from it (~0.1 s). Migrations still run after unpacking, so a binary whose seed is
 * older than its migrations only applies the difference. Under `bun run` (no binary) there is no
 * seed and PGlite runs initdb as before.
 */
import { PGlite } from "@electric-sql/pglite";

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
