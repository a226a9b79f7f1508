#!/usr/bin/env bash
# Build the single executable dist/reelay. Everything read at run time (migrations, PGlite's wasm
# and data bundle, the USE-lite weights and vocabulary, TF.js and WebP wasm, the docs UI script)
# is imported with `with { type: "file" | "text" }` and so embedded by `bun build --compile`.
set -euo pipefail
cd "$(dirname "$0")"
BUN="${BUN:-$(command -v bun || echo node_modules/.bin/bun)}"
mkdir -p dist
"$BUN" build --compile --sourcemap=none src/main.ts --outfile dist/reelay "$@"
ls -la dist/reelay
