// libFuzzer target for the regex compiler. The input is a pattern, optionally followed by
// kRegexTextSeparator and a text (any bytes) to match. Under tight limits:
//  - compiling succeeds or fails with kInvalidArgument, from the front end ("regex ...") or
//    from the builder's own size count, naming the limit;
//  - a compiled pattern's grammar respects max_elements and runs over the text (the
//    properties below hold unless the matcher gives up past its stack limit);
//  - what matches in full also matches in search mode (JSON Schema's `pattern`);
//  - the text written as escapes (\u{..}, classes) compiles and matches exactly the text, and
//    so does the pattern's alternation with it.
// Nothing may crash, hang (libFuzzer's -timeout) or exhaust memory (-rss_limit_mb).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/base/fuzz_assert.h"
#include "core/base/utf8.h"
#include "core/grammar/fuzz/regex_seeds.h"
#include "core/grammar/grammar_builder.h"
#include "core/grammar/grammar_matcher.h"
#include "core/grammar/regex_compiler.h"

namespace tandem {
namespace {

constexpr size_t kMaxTextBytes = 256;

GrammarLimits FuzzLimits() {
  GrammarLimits limits;
  // Small enough that short inputs reach every limit.
  limits.max_rules = 300;
  limits.max_elements = 3000;
  limits.max_repeat = 100;
  limits.max_nesting = 20;
  return limits;
}

// Holds the front end's refusal properties; true if `grammar` compiled.
bool CheckCompiled(const absl::StatusOr<Grammar>& grammar, absl::string_view pattern,
                   const GrammarLimits& limits) {
  if (grammar.ok()) {
    TANDEM_FUZZ_ASSERT(static_cast<int64_t>(grammar->code.size()) <= limits.max_elements,
                       "%zu elements", grammar->code.size());
    return true;
  }
  const absl::string_view message = grammar.status().message();
  TANDEM_FUZZ_ASSERT(
      grammar.status().code() == absl::StatusCode::kInvalidArgument &&
          (absl::StartsWith(message, "regex") || absl::StrContains(message, "(limit max_")),
      "pattern '%s': %s", std::string(pattern).c_str(), grammar.status().ToString().c_str());
  return false;
}

absl::StatusOr<Grammar> CompileSearch(absl::string_view pattern, const GrammarLimits& limits) {
  GrammarBuilder builder(limits);
  const int32_t root = builder.AddRule("root");
  RegexOptions options;
  options.search = true;
  options.limits = limits;
  absl::StatusOr<GrammarExpr> expr = RegexToExpr(pattern, builder, options);
  if (!expr.ok()) return expr.status();
  if (absl::Status defined = builder.DefineRule(root, *std::move(expr)); !defined.ok()) {
    return defined;
  }
  return std::move(builder).Build(root);
}

// `text` (valid UTF-8) as a pattern matching exactly it: letters and digits as themselves,
// the rest as \u{..} escapes, every third code point inside a class.
std::string Escape(absl::string_view text) {
  std::string pattern;
  size_t pos = 0;
  for (int i = 0; pos < text.size(); ++i) {
    const size_t length = utf8::CharLength(text, pos);
    uint32_t cp = length == 1 ? static_cast<uint8_t>(text[pos])
                              : static_cast<uint8_t>(text[pos]) & (0x7F >> length);
    for (size_t k = 1; k < length; ++k)
      cp = (cp << 6) | (static_cast<uint8_t>(text[pos + k]) & 0x3F);
    pos += length;
    const bool alnum =
        (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
    const std::string escaped = absl::StrCat("\\u{", absl::Hex(cp), "}");
    if (alnum) {
      pattern += static_cast<char>(cp);
    } else {
      pattern += i % 3 == 2 ? absl::StrCat("[", escaped, "]") : escaped;
    }
  }
  return pattern;
}

// Whether `grammar` matches `text`, or nullopt if the matcher gave up (past kMaxStacks: a
// counted repetition of optional parts can have more NFA states than that).
std::optional<bool> Matches(const Grammar& grammar, absl::string_view text) {
  GrammarMatcher matcher(grammar);
  MatcherState state = matcher.Start();
  for (char c : text) {
    if (!matcher.Advance(state, static_cast<uint8_t>(c), &state)) {
      if (matcher.overflowed()) return std::nullopt;
      return false;
    }
  }
  return matcher.CanEnd(state);
}

void CheckText(absl::string_view pattern, const Grammar& grammar, absl::string_view text,
               const GrammarLimits& limits) {
  const std::optional<bool> full = Matches(grammar, text);
  absl::StatusOr<Grammar> search = CompileSearch(pattern, limits);
  if (CheckCompiled(search, pattern, limits) && full == true) {
    TANDEM_FUZZ_ASSERT(Matches(*search, text) != false, "search mode misses a full match of '%s'",
                       std::string(pattern).c_str());
  }
  if (!utf8::Validate(text).ok()) return;
  const std::string escaped = Escape(text);
  absl::StatusOr<Grammar> exact = CompileRegex(escaped);
  TANDEM_FUZZ_ASSERT(exact.ok(), "escaped text '%s': %s", escaped.c_str(),
                     exact.status().ToString().c_str());
  TANDEM_FUZZ_ASSERT(Matches(*exact, text) == true, "'%s' misses its text", escaped.c_str());
  TANDEM_FUZZ_ASSERT(Matches(*exact, absl::StrCat(text, "a")) == false, "'%s' matches more",
                     escaped.c_str());
  const std::string either = absl::StrCat("(?:", pattern, ")|", escaped);
  absl::StatusOr<Grammar> alternation = CompileRegex(either, limits);
  if (CheckCompiled(alternation, either, limits)) {
    TANDEM_FUZZ_ASSERT(Matches(*alternation, text) != false, "'%s' misses the text",
                       either.c_str());
  }
}

}  // namespace
}  // namespace tandem

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  absl::string_view pattern = input;
  absl::string_view text;
  bool has_text = false;
  if (const size_t split = input.find(fuzzing::kRegexTextSeparator);
      split != absl::string_view::npos) {
    pattern = input.substr(0, split);
    text = input.substr(split + std::char_traits<char>::length(fuzzing::kRegexTextSeparator));
    text = text.substr(0, kMaxTextBytes);
    has_text = true;
  }
  const GrammarLimits limits = FuzzLimits();
  absl::StatusOr<Grammar> grammar = CompileRegex(pattern, limits);
  if (CheckCompiled(grammar, pattern, limits) && has_text) {
    CheckText(pattern, *grammar, text, limits);
  }
  return 0;
}
