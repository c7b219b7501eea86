#!/usr/bin/env bash
# Runs every test layer and ends with one line: "N passed, M failed".
#   1. Criterion unit tests, one program per module (ASan + UBSan build)
#   2. wire transcripts over stdio against the real binary (in the unit run: tests/wire)
#   3. busted specs (spec/) with the snodo Lua module
#   4. the official TypeScript client over stdio and HTTP (Node 22 from npm)
#   5. fuzz corpus replays (ctest)
#   6. the official MCP conformance suite over HTTP, scored against
#      tests/conformance/expected-failures.txt (its own summary is not last)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
ASAN=$ROOT/build/asan
REL=$ROOT/build/release
LOG=$ROOT/build/test-logs
mkdir -p "$LOG"
passed=0
failed=0

count() { passed=$((passed + $1)); failed=$((failed + $2)); }

fail_layer() { # a layer that could not run counts as one failure
  echo "FAILED: $1" >&2
  count 0 1
}

echo "== build (sanitizers: address, undefined)"
cmake -S "$ROOT" -B "$ASAN" -DSN_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >"$LOG/cmake-asan.log" 2>&1 &&
  cmake --build "$ASAN" -j"$(nproc)" >"$LOG/build-asan.log" 2>&1 || {
  tail -n 40 "$LOG/build-asan.log" "$LOG/cmake-asan.log" >&2
  fail_layer "sanitizer build"
  echo "$passed passed, $failed failed"
  exit 1
}
echo "== build (release, for the Lua module and the client test)"
cmake -S "$ROOT" -B "$REL" -DCMAKE_BUILD_TYPE=Release >"$LOG/cmake-rel.log" 2>&1 &&
  cmake --build "$REL" -j"$(nproc)" >"$LOG/build-rel.log" 2>&1 || {
  tail -40 "$LOG/build-rel.log" >&2
  fail_layer "release build"
}

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$ROOT/tests/lsan.supp
export SNODO_BIN=$ASAN/snodo
export SNODO_RELEASE_BIN=$REL/snodo

echo "== unit and wire tests (Criterion)"
for t in "$ASAN"/sn_test_*; do
  [ -x "$t" ] || continue
  name=$(basename "$t")
  out="$LOG/$name.log"
  "$t" --jobs 2 >"$out" 2>&1
  rc=$?
  line=$(grep -a 'Synthesis:' "$out" | tail -1)
  if [ -z "$line" ]; then
    tail -30 "$out" >&2
    fail_layer "$name (no synthesis line, exit $rc)"
    continue
  fi
  p=$(sed -E 's/.*Passing: ([0-9]+).*/\1/' <<<"$line")
  f=$(sed -E 's/.*Failing: ([0-9]+).*/\1/' <<<"$line")
  c=$(sed -E 's/.*Crashing: ([0-9]+).*/\1/' <<<"$line")
  echo "$name: $line"
  # Criterion 2.4.1 counts a test whose .fini aborts (mem_end: a leak) as
  # passing; its warning line is what tells.
  torn=$(grep -ac 'crashed during its setup or teardown' "$out" || true)
  if [ "$torn" -gt 0 ]; then
    grep -a -B2 'crashed during its setup or teardown' "$out" >&2
    p=$((p - torn))
    c=$((c + torn))
  fi
  if grep -aq -E 'LeakSanitizer|AddressSanitizer|runtime error:' "$out"; then
    grep -a -E -m5 -A5 'LeakSanitizer|AddressSanitizer|runtime error:' "$out" >&2
    fail_layer "$name: sanitizer report"
  fi
  [ "$f" -gt 0 ] || [ "$c" -gt 0 ] && grep -a -E '\[(FAIL|----)\]' "$out" | head -40 >&2
  count "$p" $((f + c))
  [ "$rc" -ne 0 ] && [ "$f" -eq 0 ] && [ "$c" -eq 0 ] && fail_layer "$name exited $rc"
done

echo "== fuzz corpus replays (ctest)"
if (cd "$ASAN" && ctest -R '^fuzz_' --output-on-failure >"$LOG/ctest-fuzz.log" 2>&1); then
  n=$(grep -cE 'Test +#[0-9]+: fuzz_.*Passed' "$LOG/ctest-fuzz.log" || true)
  echo "fuzz replays: $n corpora replayed clean"
  count "$n" 0
else
  tail -30 "$LOG/ctest-fuzz.log" >&2
  n=$(grep -cE 'Test +#[0-9]+: fuzz_.*Passed' "$LOG/ctest-fuzz.log" || true)
  count "$n" 1
fi

echo "== Lua specs (busted)"
export LUA_CPATH="$REL/?.so;;"
busted_out="$LOG/busted.log"
# snodo.so embeds lua/: no --lpath, or busted would load lua/snodo/testing.lua
# as a plain file instead of through the module's C loader
lua5.4 /usr/bin/busted spec >"$busted_out" 2>&1
line=$(grep -aE '^[0-9]+ successes? / [0-9]+ failures? / [0-9]+ errors?' "$busted_out" | tail -1)
if [ -z "$line" ]; then
  tail -30 "$busted_out" >&2
  fail_layer "busted (no summary)"
else
  echo "busted: $line"
  s=$(sed -E 's/^([0-9]+) success.*/\1/' <<<"$line")
  f=$(sed -E 's/.* ([0-9]+) failures? .*/\1/' <<<"$line")
  e=$(sed -E 's/.* ([0-9]+) errors?.*/\1/' <<<"$line")
  [ $((f + e)) -gt 0 ] && tail -60 "$busted_out" >&2
  count "$s" $((f + e))
fi

echo "== official TypeScript client over stdio and HTTP"
if [ -f "$ROOT/tests/client/run.sh" ]; then
  client_out="$LOG/client.log"
  SNODO_BIN=$REL/snodo bash "$ROOT/tests/client/run.sh" "$ROOT/build/node" >"$client_out" 2>&1
  p=$(grep -aE '^# pass [0-9]+' "$client_out" | tail -1 | awk '{print $3}')
  f=$(grep -aE '^# fail [0-9]+' "$client_out" | tail -1 | awk '{print $3}')
  if [ -z "$p" ]; then
    tail -30 "$client_out" >&2
    fail_layer "TypeScript client test (no summary)"
  else
    echo "client: $p passed, $f failed"
    [ "$f" -gt 0 ] && grep -aE 'not ok|Error|expected|actual' "$client_out" | head -40 >&2
    count "$p" "$f"
  fi
fi

echo "== official MCP conformance suite over HTTP (both requirement sets)"
if [ -f "$ROOT/tests/conformance/run.sh" ]; then
  conf_out="$LOG/conformance.log"
  SNODO_BIN=$ASAN/snodo SNODO_NODE_CACHE=$ROOT/build/node \
    sh "$ROOT/tests/conformance/run.sh" "$ROOT/build/conformance" >"$conf_out" 2>&1
  line=$(grep -aE '^conformance: [0-9]+ passed' "$conf_out" | tail -1)
  if [ -z "$line" ]; then
    tail -30 "$conf_out" >&2
    fail_layer "conformance (no summary)"
  else
    grep -aE '^[0-9-]+: [0-9]+ passed' "$conf_out"
    echo "$line"
    p=$(sed -E 's/^conformance: ([0-9]+) passed.*/\1/' <<<"$line")
    f=$(sed -E 's/.* ([0-9]+) failed$/\1/' <<<"$line")
    [ "$f" -gt 0 ] && grep -aE '^(FAIL|XPASS|STALE)' "$conf_out" | head -40 >&2
    count "$p" "$f"
  fi
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
