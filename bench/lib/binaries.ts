/**
 * What the start and memory benchmarks run, side by side in a scratch directory: a copy of the
 * compiled reelay binary (built by compile.sh if missing) and a bare compiled Bun.serve built the
 * same way (bytecode) that answers every path with {"status":"ok"}.
 */
import { copyFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { compiledBinary } from "../../test/support/harness.ts";

/** `--name value` from the command line, else `def` */
export const arg = (name: string, def: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? def : process.argv[i + 1]!;
};

/** Copies the reelay binary and compiles the bare server into `dir`; returns their paths. */
export function prepareBinaries(dir: string): { reelay: string; bare: string } {
  const reelay = join(dir, "reelay");
  copyFileSync(compiledBinary(), reelay);
  Bun.spawnSync(["chmod", "+x", reelay]);
  writeFileSync(join(dir, "bare.ts"), `Bun.serve({ hostname: "127.0.0.1", port: Number(process.env.PORT), fetch: () => Response.json({ status: "ok" }) });`);
  const bare = join(dir, "bare");
  const built = Bun.spawnSync([process.execPath, "build", "--compile", "--bytecode", "--format=esm", join(dir, "bare.ts"), "--outfile", bare], { stdout: "ignore", stderr: "pipe" });
  if (built.exitCode !== 0) throw new Error("could not compile the bare server: " + built.stderr.toString());
  return { reelay, bare };
}
