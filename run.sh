#!/usr/bin/env bash
# The two commands of the README:
#   ./run.sh serve [DIR] [snodo serve options]   build, then serve DIR (default components/)
#   ./run.sh test                                 build with sanitizers, run every test
# Both install what is missing on a fresh Debian 12 machine (as root) first.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD

DEBIAN_PACKAGES=(build-essential cmake pkg-config liblua5.4-dev lua5.4 lua-cjson lua-cjson-dev
  libuv1-dev node-llhttp libcriterion-dev libjansson-dev libssl-dev libpcre2-dev lua-busted)

install_packages() {
  local missing=()
  for p in "${DEBIAN_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # npm only fetches Node 22 for the tests; any npm will do (a machine may
  # have one from another Node.js packaging, which Debian's npm conflicts with)
  if [ "${1:-}" = test ] && ! command -v npm >/dev/null; then
    missing+=(npm)
  fi
  # The JSON Schema suite's tests that $ref the 2020-12 meta-schema read it
  # from python3-jsonschema, which ships it
  if [ "${1:-}" = test ] && ! dpkg-query -W -f='${Status}' python3-jsonschema 2>/dev/null |
    grep -q "install ok installed"; then
    missing+=(python3-jsonschema)
  fi
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "run.sh: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

build() { # build DIR [cmake options...]
  local dir=$1
  shift
  cmake -S "$ROOT" -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j"$(nproc)" >/dev/null
}

case "${1:-}" in
serve)
  shift
  install_packages
  build "$ROOT/build/release" -DCMAKE_BUILD_TYPE=Release
  dir=components
  if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then dir=$1; shift; fi
  exec "$ROOT/build/release/snodo" serve "$dir" "$@"
  ;;
test)
  install_packages test
  exec bash "$ROOT/tests/run_all.sh"
  ;;
*)
  echo "usage: ./run.sh serve [DIR] [options] | ./run.sh test" >&2
  exit 2
  ;;
esac
