#!/usr/bin/env bash
# Build the single binary of an earlier release (default: the previous one, PREVIOUS_RELEASE below)
# from a git worktree of that commit, with its own `npm ci` and compile.sh, and cache it:
#   bash scripts/build-release.sh [commit]   → prints the binary's path
# The cache is $REELAY_RELEASE_CACHE (default ${TMPDIR:-/tmp}/reelay-releases/<commit>/reelay); a
# second call returns at once. The rolling-upgrade test (test/lifecycle/rolling-upgrade.test.ts)
# runs this; it takes ~2–4 minutes on a 2-core machine the first time (npm ci + compile).
set -euo pipefail
PREVIOUS_RELEASE=222e0b0
cd "$(dirname "$0")/.."
rev=$(git rev-parse --short=7 "${1:-$PREVIOUS_RELEASE}^{commit}")
cache="${REELAY_RELEASE_CACHE:-${TMPDIR:-/tmp}/reelay-releases}/$rev"
if [ -x "$cache/reelay" ]; then echo "$cache/reelay"; exit 0; fi
mkdir -p "$cache"
src="$cache/src"
exec 9>"$cache/.lock"; flock 9   # two builds at once: the second waits and reuses the first
if [ -x "$cache/reelay" ]; then echo "$cache/reelay"; exit 0; fi
git worktree remove --force "$src" >/dev/null 2>&1 || rm -rf "$src"
git worktree prune
git worktree add --detach "$src" "$rev" >&2
(
  cd "$src"
  npm ci --no-audit --no-fund --ignore-scripts=false >&2
  PATH="$PWD/node_modules/.bin:$PATH" bash compile.sh >&2
)
mv "$src/dist/reelay" "$cache/reelay.tmp" && mv "$cache/reelay.tmp" "$cache/reelay"
git worktree remove --force "$src" >&2
echo "$cache/reelay"
