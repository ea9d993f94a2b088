#!/usr/bin/env bash
# Tandem's main job: installs what is missing, builds, and runs the most complete path that
# exists so far. Models come from --model/--draft, $TANDEM_MODEL/$TANDEM_DRAFT, or the shared
# test models in ../shared/models ($TANDEM_SHARED).
# Usage: tools/demo.sh [--model FILE_OR_DIR] [--draft FILE_OR_DIR] [--prompt TEXT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

model=${TANDEM_MODEL:-}
draft=${TANDEM_DRAFT:-}
prompt="Once upon a time"
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model=$2; shift 2 ;;
    --draft) draft=$2; shift 2 ;;
    --prompt) prompt=$2; shift 2 ;;
    -h|--help) sed -n 2,6p "$0"; exit 0 ;;
    *) echo "demo: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

"$root/tools/setup.sh"
# Only what the demo runs: the two servers and the client (the tests are tools/test.sh's).
"$root/tools/build.sh" tandem-worker tandem-coordinator tandem-chat
bin=${TANDEM_BUILD_DIR:-$root/build}/bin

shared=${TANDEM_SHARED:-$(cd "$root/.." && pwd)/shared}
if [ -z "$model" ] && [ -f "$shared/models/stories260K/stories260K.gguf" ]; then
  model=$shared/models/stories260K/stories260K.gguf
  draft=${draft:-$shared/models/stories260K/derived/stories-draft-distilled.gguf}
fi
if [ -z "$model" ]; then
  # A fresh machine without models: a small random-weight target/draft pair, so the whole
  # path still runs. Its text is noise.
  demo_models=${TANDEM_BUILD_DIR:-$root/build}/demo-models
  mkdir -p "$demo_models"
  if [ ! -f "$demo_models/target.gguf" ]; then
    "$root/tools/make_fixture_model" --dim 128 --layers 4 --heads 4 --kv-heads 2 --ffn 256 \
      --seed 1 --name demo-target --out-gguf "$demo_models/target.gguf"
    "$root/tools/make_fixture_model" --dim 64 --layers 2 --heads 2 --kv-heads 1 --ffn 128 \
      --seed 2 --name demo-draft --out-gguf "$demo_models/draft.gguf"
  fi
  model=$demo_models/target.gguf
  draft=$demo_models/draft.gguf
  echo "tandem demo: no models given and none in $shared/models: using a random-weight pair" \
       "($model). Its text will be noise; run 'tools/demo.sh --model YOUR.gguf [--draft" \
       "SMALL.gguf]' or set TANDEM_MODEL/TANDEM_DRAFT for real output." >&2
fi

echo "tandem demo: target $model${draft:+, draft $draft}" >&2
# The three processes on loopback: target worker, draft worker, coordinator.
run_dir=$(mktemp -d)
trap '"$root/deploy/local/tandem-local.sh" stop --dir "$run_dir" >/dev/null 2>&1; rm -rf "$run_dir"' EXIT
"$root/deploy/local/tandem-local.sh" start --target "$model" ${draft:+--draft "$draft"} \
  --dir "$run_dir" >&2
coordinator=$(cat "$run_dir/coordinator.addr")
echo "tandem demo: streaming a reply through the coordinator at $coordinator" >&2
"$bin/tandem-chat" --server "$coordinator" --format raw -p "$prompt" --temp 0 --max-tokens 64
