#!/usr/bin/env bash
# Configures (once) and builds Tandem with CMake + Ninja into build/ (or $TANDEM_BUILD_DIR).
# Usage: tools/build.sh [ninja targets...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TANDEM_BUILD_DIR:-$root/build}
# ccache keeps its cache outside the repo; BASEDIR + NOHASHDIR make clones share it.
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DTANDEM_WERROR=ON ${TANDEM_CMAKE_ARGS:-} >/dev/null
fi
cmake --build "$build" -j "$(nproc)" ${1:+--target "$@"}
