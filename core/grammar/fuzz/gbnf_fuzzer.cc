// libFuzzer target for the GBNF front end. The input is a grammar, optionally followed by
// kGbnfTextSeparator (gbnf_seeds.h) and a text to match. The grammar is parsed with tight
// limits. Properties: ParseGbnf fails only with kInvalidArgument and a message that starts
// with "GBNF"; a grammar it returns is well formed (every rule has an alternative, every
// alternative ends, every reference and byte set is in range, the root is a rule); matching
// the text byte by byte agrees with NextBytes and with GrammarMatches. Nothing may crash, hang
// (libFuzzer's -timeout) or exhaust memory (-rss_limit_mb).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "core/base/fuzz_assert.h"
#include "core/grammar/fuzz/gbnf_seeds.h"
#include "core/grammar/gbnf_parser.h"
#include "core/grammar/grammar.h"
#include "core/grammar/grammar_builder.h"
#include "core/grammar/grammar_matcher.h"

namespace tandem {
namespace {

constexpr size_t kMaxTextBytes = 4096;

GrammarLimits FuzzLimits() {
  GrammarLimits limits;
  limits.max_rules = 2000;
  limits.max_elements = 200000;
  limits.max_repeat = 200;
  limits.max_nesting = 64;
  return limits;
}

void CheckWellFormed(const Grammar& g) {
  const auto rules = static_cast<int64_t>(g.rules.size());
  TANDEM_FUZZ_ASSERT(g.root >= 0 && g.root < rules, "root %d of %lld rules", g.root,
                     static_cast<long long>(rules));
  TANDEM_FUZZ_ASSERT(g.rule_names.size() == g.rules.size(), "%zu names for %zu rules",
                     g.rule_names.size(), g.rules.size());
  for (const std::vector<int32_t>& alternatives : g.rules) {
    TANDEM_FUZZ_ASSERT(!alternatives.empty(), "a rule without alternatives");
    for (const int32_t start : alternatives) {
      for (int64_t i = start;; ++i) {
        TANDEM_FUZZ_ASSERT(i >= 0 && i < static_cast<int64_t>(g.code.size()),
                           "alternative at %d runs off the code", start);
        const int32_t element = g.code[i];
        if (element == kEndOfAlternative) break;
        if (IsRuleRef(element)) {
          TANDEM_FUZZ_ASSERT(element < rules, "reference to rule %d of %lld", element,
                             static_cast<long long>(rules));
        } else {
          TANDEM_FUZZ_ASSERT(ByteSetIndex(element) < static_cast<int32_t>(g.byte_sets.size()),
                             "byte set %d of %zu", ByteSetIndex(element), g.byte_sets.size());
        }
      }
    }
  }
}

void MatchText(const Grammar& grammar, absl::string_view text) {
  GrammarMatcher matcher(grammar);
  MatcherState state = matcher.Start();
  bool alive = true;
  for (const char c : text) {
    const auto byte = static_cast<uint8_t>(c);
    const bool allowed = matcher.NextBytes(state).Contains(byte);
    alive = matcher.Advance(state, byte, &state);
    TANDEM_FUZZ_ASSERT(alive == allowed || matcher.overflowed(),
                       "Advance(0x%02X) is %d but NextBytes says %d", byte, alive, allowed);
    if (!alive) break;
  }
  const bool matched = alive && matcher.CanEnd(state);
  TANDEM_FUZZ_ASSERT(matched == GrammarMatches(grammar, text) || matcher.overflowed(),
                     "the byte walk says %d, GrammarMatches disagrees", matched);
}

}  // namespace
}  // namespace tandem

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find(fuzzing::kGbnfTextSeparator);
  const absl::string_view text =
      split == absl::string_view::npos
          ? absl::string_view()
          : input.substr(split + fuzzing::kGbnfTextSeparator.size(), kMaxTextBytes);
  const absl::StatusOr<Grammar> grammar = ParseGbnf(input.substr(0, split), FuzzLimits());
  if (!grammar.ok()) {
    TANDEM_FUZZ_ASSERT(grammar.status().code() == absl::StatusCode::kInvalidArgument &&
                           absl::StartsWith(grammar.status().message(), "GBNF"),
                       "ParseGbnf gave %s", grammar.status().ToString().c_str());
    return 0;
  }
  CheckWellFormed(*grammar);
  MatchText(*grammar, text);
  return 0;
}
