# shellcheck shell=bash disable=SC2153
# The HTTP part of tests/bench/run.sh (sourced by it, not run on its own):
# start the HTTP peers, check their answers, open initialize-era sessions,
# then run wrk against every (era, peer) cell at each connection count,
# interleaved over rounds, recording one line per run in $RESULTS:
#   http ERA PEER CONNS ROUND REQ_PER_S P50_US P99_US CPU_US_PER_REQ ERRORS
#   rss PEER IDLE_KB PEAK_KB
# Needs from run.sh: WORK BIN SNODO NODE SDK_DIR RESULTS ROUNDS SECS CONNS,
# start_peer, stop_peer, tree_pids, say.

STATELESS_BODY='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
MODERN_HEADERS=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'
  -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: echo')

declare -A PORT SESSION

# utime+stime in clock ticks of a process and its descendants
cpu_ticks() {
  local total=0 p s
  for p in $(tree_pids "$1"); do
    s=$(cat "/proc/$p/stat" 2>/dev/null) || continue
    s=${s##*) }
    # shellcheck disable=SC2086
    set -- $s
    total=$((total + ${12} + ${13}))
  done
  echo "$total"
}

# sum of a /proc/PID/status kB field (VmRSS, VmHWM) over the process tree
mem_kb() {
  local total=0 p v
  for p in $(tree_pids "$1"); do
    v=$(awk -v k="$2:" '$1 == k { print $2 }' "/proc/$p/status" 2>/dev/null)
    total=$((total + ${v:-0}))
  done
  echo "$total"
}

# waits (bounded) until PORT answers the stateless call; prints the response
await_http() {
  local port=$1 i
  for i in $(seq 1 200); do
    if curl -s -m 2 -i "http://127.0.0.1:$port/mcp" "${MODERN_HEADERS[@]}" -d "$STATELESS_BODY" 2>/dev/null; then
      return 0
    fi
    sleep 0.05
  done
  return 1
}

# waits (bounded) until something answers HTTP on PORT
await_port() {
  local i
  for i in $(seq 1 200); do
    curl -s -m 2 -o /dev/null "http://127.0.0.1:$1/mcp" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# opens an initialize-era session on PORT; prints its Mcp-Session-Id
open_session() {
  local port=$1 sid
  sid=$(curl -s -m 5 -i "http://127.0.0.1:$port/mcp" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"snodo-bench","version":"1.0.0"}}}' |
    tr -d '\r' | awk 'tolower($1) == "mcp-session-id:" { print $2 }')
  [ -n "$sid" ] || return 1
  curl -s -m 5 -o /dev/null "http://127.0.0.1:$port/mcp" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-11-25' \
    -H "Mcp-Session-Id: $sid" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  local answer
  answer=$(curl -s -m 5 "http://127.0.0.1:$port/mcp" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-11-25' \
    -H "Mcp-Session-Id: $sid" \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}')
  case $answer in
    *'"text":"echo: hello"'*) echo "$sid" ;;
    *) say "session on port $port: unexpected answer: $answer"; return 1 ;;
  esac
}

# run_wrk ERA PEER CONNS SECS ROUND   (ROUND 0: warm-up, not recorded)
run_wrk() {
  local era=$1 peer=$2 conns=$3 secs=$4 round=$5 threads=2 pid out c0 c1
  [ "$conns" -lt 2 ] && threads=1
  pid=$(peer_pid "$peer")
  c0=$(cpu_ticks "$pid")
  out=$(MCP_ERA=$era MCP_SESSION_ID=${SESSION[$peer]:-} timeout $((secs + 30)) \
    wrk -t"$threads" -c"$conns" -d"${secs}s" --timeout 10s -s "$HERE/wrk_mcp.lua" \
    "http://127.0.0.1:${PORT[$peer]}/mcp" 2>&1) || true
  c1=$(cpu_ticks "$pid")
  [ "$round" = 0 ] && return 0
  local line
  line=$(printf '%s\n' "$out" | grep '^RESULT ' || true)
  if [ -z "$line" ]; then
    say "wrk failed against $peer ($era, $conns connections): $(printf '%s' "$out" | tail -3)"
    printf 'http\t%s\t%s\t%s\t%s\t0\t0\t0\t0\t-1\n' "$era" "$peer" "$conns" "$round" >>"$RESULTS"
    return 0
  fi
  printf '%s\n' "$line" | awk -v era="$era" -v peer="$peer" -v conns="$conns" -v round="$round" \
    -v ticks=$((c1 - c0)) -v hz="$CLK_TCK" '{
      for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      rps = v["requests"] / (v["duration_us"] / 1e6)
      cpu = v["requests"] > 0 ? ticks * 1e6 / hz / v["requests"] : 0
      err = v["connect"] + v["read"] + v["write"] + v["status"] + v["timeout"]
      printf "http\t%s\t%s\t%s\t%s\t%.0f\t%d\t%d\t%.2f\t%d\n", era, peer, conns, round, rps,
        v["p50_us"], v["p99_us"], cpu, err
    }' >>"$RESULTS"
}

# the HTTP peers: name -> process; the session peer of the SDK is its own process
http_phase() {
  local dir=$WORK/echo p
  for p in snodo1 snodo sdk sdk_s bare; do PORT[$p]=$("$BIN/mcp_driver" freeport); done
  start_peer snodo1 "$SNODO" serve "$dir" --http "127.0.0.1:${PORT[snodo1]}" --workers 1
  start_peer snodo "$SNODO" serve "$dir" --http "127.0.0.1:${PORT[snodo]}"
  start_peer sdk "$NODE" "$SDK_DIR/sdk_server.mjs" http-modern "${PORT[sdk]}"
  start_peer sdk_s "$NODE" "$SDK_DIR/sdk_server.mjs" http-session "${PORT[sdk_s]}"
  start_peer bare "$BIN/bare_responder" http 127.0.0.1 "${PORT[bare]}"

  # every peer answers the same call; Snodo and the bare responder with the same body
  local reference="" answer body
  for p in snodo1 snodo bare sdk; do
    answer=$(await_http "${PORT[$p]}" | tr -d '\r') || die "$p does not answer on port ${PORT[$p]} (see $WORK/logs/$p.log)"
    case $answer in
      *'"text":"echo: hello"'*) ;;
      *) die "$p answers something else: $answer" ;;
    esac
    body=$(printf '%s\n' "$answer" | awk 'b { print } /^$/ { b = 1 }')
    if [ "$p" != sdk ]; then
      [ -z "$reference" ] && reference=$body
      if [ "$body" != "$reference" ]; then
        say "WARNING: $p answers another body than snodo: $body"
        printf 'note\t%s answers another body than snodo --workers 1\n' "$p" >>"$RESULTS"
      fi
    fi
  done
  await_port "${PORT[sdk_s]}" || die "sdk_s does not listen on port ${PORT[sdk_s]}"
  for p in snodo1 snodo sdk_s; do
    SESSION[$p]=$(open_session "${PORT[$p]}") || die "cannot open an initialize-era session on $p"
  done
  declare -gA IDLE_KB
  for p in snodo1 snodo sdk sdk_s bare; do IDLE_KB[$p]=$(mem_kb "$(peer_pid "$p")" VmRSS); done

  local cells=(modern:snodo1 modern:snodo modern:sdk modern:bare legacy:snodo1 legacy:snodo legacy:sdk_s)
  local n=${#cells[@]} conns r i cell
  say "HTTP: ${#cells[@]} cells x connections {$CONNS} x $ROUNDS rounds x ${SECS}s, interleaved"
  for cell in "${cells[@]}"; do run_wrk "${cell%%:*}" "${cell#*:}" 8 "$WARMUP_SECS" 0; done
  for conns in $CONNS; do
    for r in $(seq 1 "$ROUNDS"); do
      for i in $(seq 0 $((n - 1))); do
        cell=${cells[$(((i + r - 1) % n))]} # each round starts one cell later
        run_wrk "${cell%%:*}" "${cell#*:}" "$conns" "$SECS" "$r"
      done
    done
    say "HTTP: $conns connections done"
  done
  for p in snodo1 snodo sdk sdk_s bare; do
    if ! kill -0 "$(peer_pid "$p")" 2>/dev/null; then
      say "$p DIED during the HTTP runs (see $WORK/logs/$p.log)"
      printf 'died\t%s\n' "$p" >>"$RESULTS"
      continue
    fi
    printf 'rss\t%s\t%s\t%s\n' "$p" "${IDLE_KB[$p]}" "$(mem_kb "$(peer_pid "$p")" VmHWM)" >>"$RESULTS"
  done
  for p in snodo1 snodo sdk sdk_s bare; do stop_peer "$p"; done
}
