#!/usr/bin/env bash
# Installs the Debian 12 packages Tandem needs, and only the missing ones. Idempotent and
# quiet when everything is present. Run as root, or as a user with sudo.
set -euo pipefail

PACKAGES=(
  # toolchain
  g++ cmake ninja-build pkgconf ccache git clang libclang-rt-14-dev
  # libraries
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  prometheus-cpp-dev libgtest-dev libgmock-dev libpcre2-dev libgoogle-glog-dev
  # Python clients, stubs and the numpy reference
  python3 python3-grpcio python3-protobuf python3-numpy python3-yaml grpc-proto
  # operations: Prometheus for the monitoring tests, curl for health checks
  prometheus curl systemd
  # the second build
  bazel-bootstrap
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "tandem setup: installing ${missing[*]}" >&2
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "tandem setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "tandem setup: done" >&2
