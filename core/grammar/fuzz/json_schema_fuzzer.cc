// libFuzzer target for the JSON Schema compiler. The input is a schema document (any bytes),
// optionally followed by "\n#--instance--\n" and a text to match. Under tight limits:
//  - compiling succeeds, or fails with kInvalidArgument from the front end ("JSON Schema: ...");
//  - a compiled grammar respects max_elements, runs over the text, and a random sentence of it
//    is a JSON text (json::Parse accepts it);
//  - AddJsonSchemaRule agrees with CompileJsonSchema on the parsed schema's success.
// Nothing may crash, hang (libFuzzer's -timeout) or exhaust memory (-rss_limit_mb).
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "core/base/fuzz_assert.h"
#include "core/base/json.h"
#include "core/grammar/grammar_builder.h"
#include "core/grammar/grammar_matcher.h"
#include "core/grammar/json_schema_compiler.h"
#include "core/grammar/random_schema_test_util.h"

namespace tandem {
namespace {

constexpr absl::string_view kInstanceSeparator = "\n#--instance--\n";

GrammarLimits FuzzLimits() {
  GrammarLimits limits;
  limits.max_rules = 2000;
  limits.max_elements = 200000;
  limits.max_repeat = 200;
  limits.max_nesting = 50;
  return limits;
}

JsonSchemaOptions FuzzOptions(size_t size) {
  JsonSchemaOptions options;
  options.max_whitespace = static_cast<int32_t>(size % 3);
  options.additional_properties_by_default = size % 5 != 0;
  options.max_schema_bytes = 64 * 1024;
  options.max_depth = 16;
  options.max_keyword_entries = 64;
  return options;
}

void CheckOne(absl::string_view schema, absl::string_view instance, size_t size) {
  const GrammarLimits limits = FuzzLimits();
  const JsonSchemaOptions options = FuzzOptions(size);
  absl::StatusOr<Grammar> grammar = CompileJsonSchema(schema, options, limits);
  if (!grammar.ok()) {
    TANDEM_FUZZ_ASSERT(grammar.status().code() == absl::StatusCode::kInvalidArgument &&
                           absl::StartsWith(grammar.status().message(), "JSON Schema"),
                       "%s", grammar.status().ToString().c_str());
    return;
  }
  TANDEM_FUZZ_ASSERT(static_cast<int64_t>(grammar->code.size()) <= limits.max_elements,
                     "%zu elements", grammar->code.size());
  GrammarMatches(*grammar, instance);
  if (std::optional<std::string> sentence =
          testing::RandomSentence(*grammar, static_cast<uint32_t>(size), 32, 1024)) {
    absl::StatusOr<json::Value> parsed = json::Parse(*sentence);
    TANDEM_FUZZ_ASSERT(parsed.ok(), "sentence '%s' is not JSON: %s", sentence->c_str(),
                       parsed.status().ToString().c_str());
  }
  // The same schema embedded through AddJsonSchemaRule compiles too.
  absl::StatusOr<json::Value> value = json::Parse(schema);
  TANDEM_FUZZ_ASSERT(value.ok(), "compiled but does not parse");
  GrammarBuilder builder(limits);
  absl::StatusOr<int32_t> rule = AddJsonSchemaRule(*value, builder, options);
  TANDEM_FUZZ_ASSERT(rule.ok(), "AddJsonSchemaRule: %s", rule.status().ToString().c_str());
}

}  // namespace
}  // namespace tandem

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find(kInstanceSeparator);
  const absl::string_view schema = input.substr(0, split);
  const absl::string_view instance =
      split == absl::string_view::npos ? "" : input.substr(split + kInstanceSeparator.size());
  CheckOne(schema, instance, size);
  return 0;
}
