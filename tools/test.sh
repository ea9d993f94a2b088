#!/usr/bin/env bash
# Tandem's test command: installs what is missing, builds, and runs every test (Bazel's unit
# tests, then CTest; CTest's summary closes the output). `.ci/run` calls exactly this.
# TANDEM_SANITIZE=1 builds and runs the CTest suite with ASan + UBSan in build-asan/ instead.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

"$root/tools/setup.sh" || exit 1

if [ -z "${TANDEM_SHARED:-}" ]; then
  export TANDEM_SHARED=$(cd "$root/.." && pwd)/shared
fi
if [ ! -d "$TANDEM_SHARED/models" ]; then
  echo "tandem test: shared test files not found at $TANDEM_SHARED (set TANDEM_SHARED);" \
       "the tests that read models will fail" >&2
fi

status=0
echo "== bazel test //... (offline, system libraries)"
bazel_log=$(mktemp)
bazel test //... --test_env=TANDEM_SHARED="$TANDEM_SHARED" >"$bazel_log" 2>&1
bazel_rc=$?
grep -vE '^(Loading|Analyzing|INFO: (From|Analyzed|Found))|^\[[0-9,]+ / [0-9,]+\]' "$bazel_log"
rm -f "$bazel_log"
if [ $bazel_rc -ne 0 ]; then
  echo "tandem test: bazel test failed (exit $bazel_rc)" >&2
  status=1
fi
bazel shutdown >/dev/null 2>&1 || true

if [ "${TANDEM_SANITIZE:-0}" = 1 ]; then
  export TANDEM_BUILD_DIR=${TANDEM_BUILD_DIR:-$root/build-asan}
  TANDEM_CMAKE_ARGS="-DTANDEM_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug ${TANDEM_CMAKE_ARGS:-}"
fi

echo "== CMake build"
if ! TANDEM_CMAKE_ARGS="-DTANDEM_SHARED=$TANDEM_SHARED ${TANDEM_CMAKE_ARGS:-}" \
     "$root/tools/build.sh"; then
  echo "tandem test: CMake build failed" >&2
  exit 1
fi

echo "== ctest"
ctest --test-dir "${TANDEM_BUILD_DIR:-$root/build}" -j "$(nproc)" --output-on-failure \
      --timeout 600 || status=1
exit $status
