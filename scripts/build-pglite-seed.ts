/**
 * compile.sh step: a migrated PGlite data directory as a tarball, embedded in the binary so a fresh
 * data dir starts without initdb (src/db/pglite-seed.ts).
 *
 *   bun scripts/build-pglite-seed.ts dist/pglite-seed.tar.gz
 */
import { drizzle } from "drizzle-orm/pglite";
import { migrate, type Db } from "../src/db/index.ts";
import { MIGRATIONS } from "../src/db/migrations.ts";
import { buildSeed } from "../src/db/pglite-seed.ts";
import * as schema from "../src/db/schema/index.ts";

const out = process.argv[2] ?? "dist/pglite-seed.tar.gz";
const t0 = performance.now();
const { tarball, migrations } = await buildSeed((client) => migrate(drizzle(client, { schema }) as unknown as Db));
if (migrations.length !== MIGRATIONS.length) throw new Error(`seed: applied ${migrations.length} of ${MIGRATIONS.length} migrations`);
await Bun.write(out, tarball);
console.log(`${out}: ${(tarball.size / 1e6).toFixed(1)} MB, migrations ${migrations.join(", ")} (${Math.round(performance.now() - t0)} ms)`);
