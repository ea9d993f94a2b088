#!/usr/bin/env bash
# Installs the Debian 12 packages Tandem needs, and only the missing ones, then the npm
# packages its tests use into a cache outside the repository ($TANDEM_NPM_DIR, default
# ~/.cache/tandem-npm; never vendored). Idempotent and quiet when everything is present. Run
# as root, or as a user with sudo (npm runs as the calling user).
set -euo pipefail

# The official OpenAI client, for the HTTP API's e2e test (tests/e2e/openai_http_test.py).
# 6.x: 7.x needs Node 22, the machines have Node 20.
NPM_PACKAGES=(openai@6.49.0)
# Kubernetes' OpenAPI schemas (v1.27) as validators, and the Prometheus Operator's, for the
# manifests' test (tests/ops/k8s_schema_test.py).
NPM_PACKAGES+=(kubernetes-models@5.1.0 @kubernetes-models/prometheus-operator@6.0.0)
# JSON Schema validation (2020-12 dialect and formats) independent of the grammar engine, the
# judge of the structured-output tests (tools/validate_json_schema.mjs, issue 27).
NPM_PACKAGES+=(ajv@8.20.0 ajv-formats@3.0.1)
# zod, for the openai client's structured-output helpers (tests/e2e/structured_output_test.py).
NPM_PACKAGES+=(zod@4.1.12)
# --- #30 apis ---
# The official Anthropic client, for the Messages API's e2e test (tests/e2e/anthropic_messages_test.py).
NPM_PACKAGES+=(@anthropic-ai/sdk@1.17.0)
# --- #30 front ---
# playwright-core drives Debian's chromium (no browser download) for the CORS e2e test
# (tests/e2e/browser_cors_test.py).
NPM_PACKAGES+=(playwright-core@1.65.1)
# --- end ---
NPM_DIR=${TANDEM_NPM_DIR:-$HOME/.cache/tandem-npm}

install_npm_packages() {
  command -v npm >/dev/null || { echo "tandem setup: npm not found (Node 20 is expected)" >&2; exit 1; }
  local missing=()
  for spec in "${NPM_PACKAGES[@]}"; do
    local name=${spec%@*} version=${spec##*@}
    local manifest=$NPM_DIR/node_modules/$name/package.json
    if ! [ -f "$manifest" ] || ! grep -q "\"version\": \"$version\"" "$manifest"; then
      missing+=("$spec")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "tandem setup: npm install ${missing[*]} into $NPM_DIR" >&2
  mkdir -p "$NPM_DIR"
  # All of them in one install: npm prunes what an install does not name.
  npm install --prefix "$NPM_DIR" --no-audit --no-fund --no-save --silent "${NPM_PACKAGES[@]}"
}

PACKAGES=(
  # toolchain
  g++ cmake ninja-build pkgconf ccache git clang libclang-rt-14-dev
  # libraries (libssl-dev: the coordinator's HTTPS front)
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  prometheus-cpp-dev libgtest-dev libgmock-dev libpcre2-dev libgoogle-glog-dev
  libssl-dev
  # Python clients, stubs and the numpy reference
  python3 python3-grpcio python3-protobuf python3-numpy python3-yaml grpc-proto
  # operations: Prometheus for the monitoring tests, curl for health checks, openssl for
  # tools/make-dev-certs.sh (TLS certificates for local runs and the mTLS tests)
  prometheus curl systemd openssl
  # the second build
  bazel-bootstrap
  # --- #30 front --- a headless browser for the CORS e2e test (tests/e2e/browser_cors_test.py)
  chromium
  # --- end ---
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  install_npm_packages
  exit 0
fi

echo "tandem setup: installing ${missing[*]}" >&2
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "tandem setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_npm_packages
echo "tandem setup: done" >&2
