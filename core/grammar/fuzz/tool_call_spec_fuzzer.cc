// libFuzzer target for the tool-call spec text (tool_call_spec.h), which crosses the wire from
// the coordinator to the workers, and the grammar built from it (tool_call_grammar.h):
//  - parsing succeeds, or fails with kInvalidArgument "tool-call spec: ...";
//  - a parsed spec written back (ToolCallSpecText) parses to the same text (canonical form);
//  - the grammar builds, or fails with kInvalidArgument; a built one runs over the input, and
//    for a forced choice (required, named) a random sentence of it is not empty.
// Nothing may crash, hang (libFuzzer's -timeout) or exhaust memory (-rss_limit_mb).
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "core/base/fuzz_assert.h"
#include "core/grammar/grammar_matcher.h"
#include "core/grammar/random_schema_test_util.h"
#include "core/grammar/tool_call_grammar.h"
#include "core/grammar/tool_call_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<ToolCallSpec> spec = ParseToolCallSpecText(input);
  if (!spec.ok()) {
    TANDEM_FUZZ_ASSERT(spec.status().code() == absl::StatusCode::kInvalidArgument &&
                           absl::StartsWith(spec.status().message(), "tool-call spec: "),
                       "%s", spec.status().ToString().c_str());
    return 0;
  }
  const std::string text = ToolCallSpecText(spec->format, spec->tools, spec->choice);
  absl::StatusOr<ToolCallSpec> again = ParseToolCallSpecText(text);
  TANDEM_FUZZ_ASSERT(again.ok(), "written spec does not parse: %s",
                     again.status().ToString().c_str());
  TANDEM_FUZZ_ASSERT(ToolCallSpecText(again->format, again->tools, again->choice) == text,
                     "not canonical: %s", text.c_str());
  absl::StatusOr<Grammar> grammar = ToolCallGrammar(spec->format, spec->tools, spec->choice);
  if (!grammar.ok()) {
    TANDEM_FUZZ_ASSERT(grammar.status().code() == absl::StatusCode::kInvalidArgument, "%s",
                       grammar.status().ToString().c_str());
    return 0;
  }
  GrammarMatches(*grammar, input);
  const bool forced = spec->choice.mode == toolcall::ToolChoice::Mode::kRequired ||
                      spec->choice.mode == toolcall::ToolChoice::Mode::kNamed;
  if (std::optional<std::string> sentence =
          testing::RandomSentence(*grammar, static_cast<uint32_t>(size), 32, 2048)) {
    TANDEM_FUZZ_ASSERT(!forced || !sentence->empty(), "a forced call grammar accepts nothing");
  }
  return 0;
}
