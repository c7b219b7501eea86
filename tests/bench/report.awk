# Turns tests/bench/run.sh's results.tsv into the benchmark's table: medians
# over the interleaved rounds, the ratios Snodo/SDK and Snodo/bare, and the
# targets of issue 8 with met / missed. Plain POSIX awk (Debian's mawk).
#   http  ERA PEER CONNS ROUND REQ_PER_S P50_US P99_US CPU_US ERRORS
#   rss   PEER IDLE_KB PEAK_KB
#   stdio PEER WINDOW ROUND CALLS_PER_S CPU_US HWM_KB ERRORS
#   cold  PEER ROUND MS RSS_KB
#   meta  KEY VALUE / note TEXT / died PEER

function add(key, v) { n[key]++; val[key, n[key]] = v + 0 }
function median(key,    i, j, m, t, a) {
  m = n[key] + 0
  if (m == 0) return 0
  for (i = 1; i <= m; i++) a[i] = val[key, i]
  for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
  return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
}
function lo(key,    i, r) { r = val[key, 1]; for (i = 2; i <= n[key]; i++) if (val[key, i] < r) r = val[key, i]; return r }
function hi(key,    i, r) { r = val[key, 1]; for (i = 2; i <= n[key]; i++) if (val[key, i] > r) r = val[key, i]; return r }
function spread(key,    m) { m = median(key); return m > 0 ? 100 * (hi(key) - lo(key)) / m : 0 }
function ratio(a, b) { return b > 0 ? a / b : 0 }
function x(r) { return r > 0 ? sprintf("%.2fx", r) : "-" }
function mb(kb) { return kb > 0 ? sprintf("%.1f", kb / 1024) : "-" }
function label(p) { return p in name ? name[p] : p }
function target(what, value, shown, goal, ok) {
  printf "  %-60s %10s  %-12s %s\n", what, (value > 0 ? shown : "-"), goal, (value > 0 ? (ok ? "met" : "MISSED") : "n/a")
  if (value > 0) { if (ok) met++; else missed++ }
}

BEGIN {
  name["snodo1"] = "snodo --workers 1"; name["snodo"] = "snodo (default workers)"
  name["sdk"] = "TS SDK v2"; name["sdk_s"] = "TS SDK v2 (sessions)"; name["bare"] = "bare libuv+llhttp"
  name["snodo_1"] = "snodo, 1 component"; name["snodo_10"] = "snodo, 10 components"
  name["snodo_200"] = "snodo, 200 components"
  era["modern"] = "2026-07-28"; era["legacy"] = "2025-11-25"
}
$1 == "meta" { meta[$2] = $3 }
$1 == "note" { notes[++nnotes] = $2 }
$1 == "died" { notes[++nnotes] = label($2) " DIED during the HTTP runs" }
$1 == "http" {
  k = $2 SUBSEP $3 SUBSEP $4
  if (!(k in seen)) { seen[k] = 1; order[++norder] = k }
  if (!($4 in conns_seen)) { conns_seen[$4] = 1; conns[++nconns] = $4 }
  add("rps" SUBSEP k, $6); add("p50" SUBSEP k, $7); add("p99" SUBSEP k, $8); add("cpu" SUBSEP k, $9)
  err[k] += $10
}
$1 == "rss" { idle[$2] = $3; peak[$2] = $4 }
$1 == "stdio" {
  k = $2 SUBSEP $3
  add("srate" SUBSEP k, $5); add("scpu" SUBSEP k, $6)
  if ($7 > shwm[k]) shwm[k] = $7
  serr[k] += $8
}
$1 == "cold" { add("cold" SUBSEP $2, $4); add("crss" SUBSEP $2, $5) }

function R(e, p, c) { return median("rps" SUBSEP e SUBSEP p SUBSEP c) }
function P99(e, p, c) { return median("p99" SUBSEP e SUBSEP p SUBSEP c) }
function CPU(e, p, c) { return median("cpu" SUBSEP e SUBSEP p SUBSEP c) }
function S(p, w) { return median("srate" SUBSEP p SUBSEP w) }

END {
  print ""
  printf "Snodo benchmark, %s, commit %s, %s CPUs, load %s at start, %s at end (%s s)\n",
    meta["date"], meta["commit"], meta["cpus"], meta["load0"], meta["load1"], meta["elapsed"]
  printf "Node %s, @modelcontextprotocol/server %s, wrk %s; every figure is the median of the interleaved rounds\n",
    meta["node"], meta["sdk"], meta["wrk"]
  print ""
  printf "HTTP tools/call echo, wrk, %s per cell; spread = (max - min) / median of req/s\n", meta["rounds"]
  printf "  %-10s %-24s %5s %9s %7s %8s %8s %9s %6s %8s %8s\n", "era", "server", "conns", "req/s", "spread",
    "p50 ms", "p99 ms", "CPU us/r", "errors", "x SDK", "x bare"
  for (ci = 1; ci <= nconns; ci++) {
    c = conns[ci]
    for (oi = 1; oi <= norder; oi++) {
      split(order[oi], kk, SUBSEP)
      if (kk[3] != c) continue
      e = kk[1]; p = kk[2]; k = order[oi]
      rps = R(e, p, c)
      xs = xb = "-"
      if (p ~ /^snodo/) {
        xs = x(ratio(rps, R(e, e == "legacy" ? "sdk_s" : "sdk", c)))
        xb = x(ratio(rps, R("modern", "bare", c)))
      }
      printf "  %-10s %-24s %5s %9.0f %6.0f%% %8.2f %8.2f %9.1f %6d %8s %8s\n", era[e], label(p), c, rps,
        spread("rps" SUBSEP k), median("p50" SUBSEP k) / 1000, P99(e, p, c) / 1000, CPU(e, p, c), err[k], xs, xb
    }
  }
  print "  (x bare compares both eras with the bare responder's 2026-07-28 figure; errors = wrk connect/read/write/timeout and non-2xx)"
  print ""
  printf "  %-34s %8s %8s\n", "RSS of the HTTP servers", "idle MB", "peak MB"
  split("snodo1 snodo sdk sdk_s bare", rp, " ")
  for (i = 1; i <= 5; i++) if (rp[i] in idle) printf "  %-34s %8s %8s\n", label(rp[i]), mb(idle[rp[i]]), mb(peak[rp[i]])
  print "  (idle: VmRSS after the first answer; peak: VmHWM after all HTTP runs)"
  print ""
  printf "stdio, %s calls of tools/call echo (2026-07-28), median of %s fresh processes each\n", meta["calls"], meta["stdio_rounds"]
  printf "  %-24s %7s %10s %7s %9s %8s %6s %8s %8s\n", "server", "window", "calls/s", "spread", "CPU us/c", "peak MB",
    "errors", "x SDK", "x bare"
  split("snodo sdk bare", sp, " ")
  for (w = 1; w <= 64; w *= 64) {
    for (i = 1; i <= 3; i++) {
      p = sp[i]; k = p SUBSEP w
      xs = xb = "-"
      if (p == "snodo") { xs = x(ratio(S(p, w), S("sdk", w))); xb = x(ratio(S(p, w), S("bare", w))) }
      printf "  %-24s %7d %10.0f %6.0f%% %9.1f %8s %6d %8s %8s\n", label(p), w, S(p, w), spread("srate" SUBSEP k),
        median("scpu" SUBSEP k), mb(shwm[k]), serr[k], xs, xb
    }
  }
  print ""
  printf "cold start over HTTP: spawn to the first complete tools/call answer, %s runs each\n", meta["cold_reps"]
  printf "  %-24s %9s %9s %9s %8s %8s %8s\n", "server", "median ms", "min ms", "max ms", "RSS MB", "x SDK", "x bare"
  split("snodo_1 snodo_10 snodo_200 sdk bare", cp, " ")
  for (i = 1; i <= 5; i++) {
    p = cp[i]; k = "cold" SUBSEP p
    if (!(k in n)) continue
    xs = xb = "-"
    if (p ~ /^snodo/) { xs = x(ratio(median(k), median("cold" SUBSEP "sdk"))); xb = x(ratio(median(k), median("cold" SUBSEP "bare"))) }
    printf "  %-24s %9.1f %9.1f %9.1f %8s %8s %8s\n", label(p), median(k), lo(k), hi(k),
      mb(median("crss" SUBSEP p)), xs, xb
  }
  print "  (RSS: VmRSS right after that first answer; the SDK serves its one tool, Snodo the echo tool among N)"
  print ""
  print "targets of issue 8 (ratios from this run)"
  c = 64
  r = ratio(R("modern", "snodo1", c), R("modern", "bare", c))
  target("HTTP 2026-07-28, 64 conns, --workers 1: req/s / bare", r, sprintf("%.2f", r), ">= 0.70", r >= 0.70)
  r = ratio(CPU("modern", "snodo1", c), CPU("modern", "bare", c))
  target("HTTP 2026-07-28, 64 conns, --workers 1: CPU per request / bare", r, sprintf("%.2f", r), "<= 1.5", r <= 1.5)
  r = ratio(R("modern", "snodo1", c), R("modern", "sdk", c))
  target("HTTP 2026-07-28, 64 conns, --workers 1: req/s / SDK", r, sprintf("%.1f", r), ">= 20", r >= 20)
  r = ratio(P99("modern", "snodo1", c), P99("modern", "sdk", c))
  target("HTTP 2026-07-28, 64 conns, --workers 1: p99 / SDK p99", r, sprintf("%.3f", r), "<= 0.05", r <= 0.05)
  r = ratio(R("legacy", "snodo1", c), R("modern", "snodo1", c))
  target("initialize era vs stateless, 64 conns, --workers 1: req/s", r, sprintf("%.2f", r), ">= 0.90", r >= 0.90)
  r = ratio(P99("legacy", "snodo1", c), P99("modern", "snodo1", c))
  target("initialize era vs stateless, 64 conns, --workers 1: p99", r, sprintf("%.2f", r), "<= 1.10", r <= 1.10)
  r = ratio(S("snodo", 1), S("bare", 1))
  target("stdio one at a time: calls/s / bare", r, sprintf("%.2f", r), ">= 0.90", r >= 0.90)
  r = ratio(S("snodo", 64), S("sdk", 64))
  target("stdio 64 in flight: calls/s / SDK", r, sprintf("%.1f", r), ">= 10", r >= 10)
  r = idle["snodo1"] / 1024
  target("RSS idle, --workers 1 (MB)", r, sprintf("%.1f", r), "<= 10", r <= 10)
  r = peak["snodo1"] / 1024
  target("RSS peak under load, --workers 1 (MB)", r, sprintf("%.1f", r), "<= 20", r <= 20)
  r = ratio(median("cold" SUBSEP "snodo_200"), median("cold" SUBSEP "sdk"))
  target("cold start, 200 components / SDK with one tool", r, sprintf("%.3f", r), "<= 0.05", r <= 0.05)
  printf "  %d met, %d missed\n", met, missed
  mx = 0
  for (oi = 1; oi <= norder; oi++) { s = spread("rps" SUBSEP order[oi]); if (s > mx) mx = s }
  print ""
  printf "noise: the largest req/s spread of one cell across rounds was %.0f%%; load average %s -> %s.\n", mx,
    meta["load0"], meta["load1"]
  print "  Nothing is pinned: wrk (2 threads, 1 for one connection) and every server share the machine's cores."
  for (i = 1; i <= nnotes; i++) print "note: " notes[i]
}
