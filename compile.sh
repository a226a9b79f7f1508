#!/usr/bin/env bash
# Build the single executable dist/reelay. Everything read at run time (migrations, PGlite's wasm
# and data bundle, the USE-lite weights and vocabulary, TF.js and WebP wasm, the docs UI script,
# stories260K and llama.cpp's linux-x64 libraries) is imported with `with { type: "file" | "text" }`
# and so embedded by `bun build --compile`.
set -euo pipefail
cd "$(dirname "$0")"
BUN="${BUN:-$(command -v bun || echo node_modules/.bin/bun)}"
mkdir -p dist
# the web console (console/ → console/dist/bundle.ts), embedded through src/modules/console
"$BUN" console/build.ts
# A migrated PGlite data dir, unpacked by a fresh install instead of running initdb (src/db/pglite-seed.ts).
"$BUN" scripts/build-pglite-seed.ts dist/pglite-seed.tar.gz
# Worker entry files are extra entrypoints: in the binary they live at their project paths
# (src/workers/worker-url.ts finds them there); the seed tarball is an embedded file.
# --bytecode: JSC bytecode is embedded, so the ~1,600 bundled modules are not parsed at start
# (first line of main at 11–46 ms instead of 120–220 ms, measured here).
# compile.ts is `bun build --compile` with one bundler plugin (node-llama-cpp, see plugins/local-llm/bundle-patch.ts).
"$BUN" compile.ts --bytecode --format=esm src/main.ts \
  plugins/preview-video/frames-worker.ts src/media/encode-worker.ts src/media/stills-worker.ts \
  plugins/local-embeddings/inference-worker.ts \
  dist/pglite-seed.tar.gz \
  --outfile dist/reelay "$@"
ls -la dist/reelay
