#!/usr/bin/env bash
# Tandem's test command: installs what is missing, builds both builds (Bazel and CMake) and
# runs every test once: the parsers' tests and fuzzers under ASan/UBSan, then everything else
# under CTest. `.ci/run` calls exactly this. Bazel builds every target (its BUILD files stay
# green) but runs no test: each Bazel test is also a CTest test, and runs there.
# A CTest test that fails is run once more, and the closing lines name every test that passed
# only on that second run (a flake is a bug to fix, not noise); the last line names the failed
# stages. Each stage's time is printed.
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
failed_stages=""
stage_times=""
stage_start=$SECONDS
end_stage() {  # end_stage NAME: records the stage's wall time for the closing lines
  stage_times="$stage_times $1 $((SECONDS - stage_start)) s;"
  stage_start=$SECONDS
}

echo "== bazel build //... (offline, system libraries; its tests run under CTest)"
bazel_log=$(mktemp)
bazel build //... >"$bazel_log" 2>&1
bazel_rc=$?
grep -vE '^(Loading|Analyzing|INFO: (From|Analyzed|Found))|^\[[0-9,]+ / [0-9,]+\]' "$bazel_log"
if [ $bazel_rc -ne 0 ]; then
  echo "tandem test: bazel build failed (exit $bazel_rc)" >&2
  # Repeated at the very end, where a truncated CI log still shows it.
  failed_stages="bazel build (exit $bazel_rc)"
  status=1
fi
rm -f "$bazel_log"
bazel shutdown >/dev/null 2>&1 || true
end_stage bazel

if [ "${TANDEM_SANITIZE:-0}" = 1 ]; then
  export TANDEM_BUILD_DIR=${TANDEM_BUILD_DIR:-$root/build-asan}
  TANDEM_CMAKE_ARGS="-DTANDEM_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug ${TANDEM_CMAKE_ARGS:-}"
fi

if [ "${TANDEM_SKIP_FUZZ:-0}" != 1 ]; then
  # Everything that takes outside input under clang's libFuzzer with ASan + UBSan, for a
  # bounded time each (model file parsers, tokenizers, chat templates, sampler settings, the
  # coordinator's and the worker's request handling, the HTTP front's request parser), and
  # the parsers' unit and broken-file tests and the template engine's tests under the same
  # sanitizers.
  echo "== libFuzzer + ASan/UBSan: every outside input (${TANDEM_FUZZ_SECONDS:-20} s each)"
  fuzz_build=$root/build-fuzz
  fuzz_targets="gguf_fuzzer safetensors_fuzzer make_seed_corpus mapped_file_test
                tensor_type_test gguf_reader_test gguf_reader_corruption_test
                safetensors_reader_test tokenizer_fuzzer make_text_seeds jinja_fuzzer
                jinja_test sampler_fuzzer make_sampler_seeds generate_fuzzer attach_fuzzer
                make_random_seeds npy_fuzzer make_npy_seeds openai_request_fuzzer
                http_request_fuzzer"
  fuzz_targets="$fuzz_targets gbnf_fuzzer make_gbnf_seeds gbnf_parser_test token_mask_fuzzer
                grammar_builder_test grammar_matcher_test grammar_constraint_test
                repeat_chains_test position_token_sets_test"
  # --- #30 apis: Anthropic's Messages and OpenAI's Responses request bodies ---
  fuzz_targets="$fuzz_targets anthropic_request_fuzzer responses_request_fuzzer"
  # --- end ---
  # The constraint front ends: regular expressions.
  fuzz_targets="$fuzz_targets regex_fuzzer make_regex_seeds regex_compiler_test"
  # JSON Schema.
  fuzz_targets="$fuzz_targets json_schema_fuzzer make_json_schema_seeds json_schema_compiler_test"
  # The reasoning split (<think>…</think>) of what the model writes.
  fuzz_targets="$fuzz_targets reasoning_splitter_fuzzer make_reasoning_seeds reasoning_splitter_test"
  # Tool-call parsing (model output per family).
  fuzz_targets="$fuzz_targets tool_call_parser_fuzzer make_tool_call_seeds json_value_scanner_test
                tool_call_parser_test"
  # The tool-call spec text (the coordinator ships it to the workers) and its grammars.
  fuzz_targets="$fuzz_targets tool_call_spec_fuzzer make_tool_call_spec_seeds tool_call_spec_test
                free_text_rules_test tool_call_grammar_test"
  if CC=clang CXX=clang++ cmake -S "$root" -B "$fuzz_build" -G Ninja -DTANDEM_FUZZ=ON \
         -DTANDEM_SANITIZE=ON -DTANDEM_FUZZ_SECONDS="${TANDEM_FUZZ_SECONDS:-20}" \
         -DTANDEM_SHARED="$TANDEM_SHARED" >/dev/null &&
     cmake --build "$fuzz_build" -j "$(nproc)" --target $fuzz_targets >/dev/null; then
    fuzz_log=$(mktemp)
    fuzz_tests="gguf|safetensors|tokenizer|jinja|sampler|generate|attach|npy|openai_request|http_request"
    fuzz_tests="$fuzz_tests|gbnf|token_mask"
    fuzz_tests="$fuzz_tests|regex"
    fuzz_tests="$fuzz_tests|json_schema"
    fuzz_tests="$fuzz_tests|reasoning_splitter"
    fuzz_tests="$fuzz_tests|tool_call_parser"
    fuzz_tests="$fuzz_tests|tool_call_spec"
    fuzz_tests="$fuzz_tests|anthropic_request|responses_request"  # #30 apis
    unit_tests="MappedFileTest|TensorTypeTest|GgufReaderTest|GgufCorruptionTest"
    unit_tests="$unit_tests|SafetensorsReaderTest|JinjaTest"
    unit_tests="$unit_tests|GbnfParserTest|GrammarBuilderTest|GrammarMatcherTest|GrammarConstraintTest"
    unit_tests="$unit_tests|RepeatChainsTest|PositionTokenSetsTest|ReturnPositionsTest"
    unit_tests="$unit_tests|RegexCompilerTest"
    unit_tests="$unit_tests|JsonSchemaCompilerTest"
    unit_tests="$unit_tests|ReasoningSplitterTest|Outputs/ReasoningSplitterTest"
    unit_tests="$unit_tests|JsonValueScannerTest|ToolCallParserTest"
    unit_tests="$unit_tests|ToolCallSpecTest|FreeTextRulesTest|ToolCallGrammarTest"
    # They ran here under the sanitizers: CTest's run below leaves them out.
    sanitized_unit_tests="^(${unit_tests})\\."
    if ctest --test-dir "$fuzz_build" --output-on-failure --timeout 600 \
         -R "^((${fuzz_tests})_fuzzer_smoke|${unit_tests})" >"$fuzz_log" 2>&1; then
      grep -E 'tests passed|Total Test time' "$fuzz_log"
    else
      cat "$fuzz_log"
      failed_stages="$failed_stages; fuzz ($(grep -E 'Failed|\*\*\*' "$fuzz_log" |
                     grep -oE 'Test +#[0-9]+: [^ ]+' | awk '{print $3}' | tr '\n' ' '))"
      status=1
    fi
    rm -f "$fuzz_log"
  else
    echo "tandem test: fuzz build failed" >&2
    failed_stages="$failed_stages; fuzz build"
    status=1
  fi
  end_stage fuzz
fi

echo "== CMake build"
if ! TANDEM_CMAKE_ARGS="-DTANDEM_SHARED=$TANDEM_SHARED ${TANDEM_CMAKE_ARGS:-}" \
     "$root/tools/build.sh"; then
  echo "tandem test: CMake build failed" >&2
  exit 1
fi

end_stage cmake-build

echo "== ctest"
build_dir=${TANDEM_BUILD_DIR:-$root/build}
retried=""
ctest_args=(--test-dir "$build_dir" --output-on-failure --timeout 600)
if [ -n "${sanitized_unit_tests:-}" ]; then
  ctest_args+=(-E "$sanitized_unit_tests")
fi
if ! ctest "${ctest_args[@]}" -j "$(nproc)"; then
  # Once more, only the failures, alone: a test that passes now passed only on a retry.
  failed_log=$build_dir/Testing/Temporary/LastTestsFailed.log
  first_failures=$(cut -d: -f2 "$failed_log" 2>/dev/null | tr '\n' ' ')
  echo "== ctest: running the ${first_failures:+failed tests }again: $first_failures"
  if ctest "${ctest_args[@]}" --rerun-failed; then
    retried=$first_failures
  else
    status=1
    failed_stages="$failed_stages; ctest ($(cut -d: -f2 "$failed_log" 2>/dev/null | tr '\n' ' '))"
  fi
fi
end_stage ctest

echo "tandem test: stage times:$stage_times"
if [ -n "$retried" ]; then
  echo "tandem test: PASSED ONLY ON RETRY (flaky, fix them): $retried" >&2
fi
if [ $status -ne 0 ]; then
  echo "tandem test: FAILED: ${failed_stages#; }" >&2
else
  echo "tandem test: all stages passed (bazel build, fuzz, ctest)${retried:+, with retries named above}"
fi
exit $status
