/** Builds the example plugin the way docs/writing-a-plugin.md says (used by tests). */
import { join } from "node:path";

export function buildEchoPlugin(outfile: string): void {
  const root = new URL("../..", import.meta.url).pathname;
  const bun = process.execPath.endsWith("bun") ? process.execPath : "bun";
  const r = Bun.spawnSync([bun, "build", join(root, "examples/echo-plugin/index.ts"), "--outfile", outfile, "--target", "bun", "--format", "esm"], { stderr: "pipe", stdout: "pipe" });
  if (r.exitCode !== 0) throw new Error(`bun build failed: ${r.stderr.toString()}`);
}
