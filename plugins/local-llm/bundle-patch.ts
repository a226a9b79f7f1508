/**
 * A `Bun.build` plugin for compiling reelay with node-llama-cpp inside. node-llama-cpp reads
 * `llama/binariesGithubRelease.json` beside its own modules with a top-level await as soon as it
 * is imported; in a compiled binary its modules live in /$bunfs, where that file is not, so the
 * binary would die at start. The file holds one string (the llama.cpp release of the prebuilt
 * binaries), which is inlined at build time. The build fails loudly if node-llama-cpp's code no
 * longer has that shape (the version is pinned in package.json).
 */
import type { BunPlugin } from "bun";
import { dirname, join } from "node:path";

const NEEDLE = "export const builtinLlamaCppRelease = await getBinariesGithubRelease();";

export const inlineLlamaCppRelease: BunPlugin = {
  name: "inline-llama-cpp-release",
  setup(build) {
    build.onLoad({ filter: /node-llama-cpp[\\/]dist[\\/]bindings[\\/]utils[\\/]binariesGithubRelease\.js$/ }, async ({ path }) => {
      const source = await Bun.file(path).text();
      if (!source.includes(NEEDLE)) throw new Error(`${path}: node-llama-cpp changed; update plugins/local-llm/bundle-patch.ts`);
      // dist/bindings/utils → the package root
      const { release } = await Bun.file(join(dirname(path), "..", "..", "..", "llama", "binariesGithubRelease.json")).json();
      if (typeof release !== "string") throw new Error(`node-llama-cpp's binariesGithubRelease.json has no release`);
      return { contents: source.replace(NEEDLE, `export const builtinLlamaCppRelease = ${JSON.stringify(release)};`), loader: "js" };
    });
  },
};
