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
"$root/tools/build.sh"
bin=${TANDEM_BUILD_DIR:-$root/build}/bin

shared=${TANDEM_SHARED:-$(cd "$root/.." && pwd)/shared}
if [ -z "$model" ] && [ -f "$shared/models/stories260K/stories260K.gguf" ]; then
  model=$shared/models/stories260K/stories260K.gguf
  draft=${draft:-$shared/models/stories260K/derived/stories-draft-distilled.gguf}
fi

echo "tandem demo: built $(ls "$bin" 2>/dev/null | tr '\n' ' ')"
if [ -z "$model" ]; then
  echo "tandem demo: no model given and no shared models found; pass --model FILE.gguf" >&2
  exit 2
fi
echo "tandem demo: target $model${draft:+, draft $draft}"
echo "tandem demo: the engine, workers and coordinator are not built yet (issues 3-6);" \
     "nothing more to run." >&2
