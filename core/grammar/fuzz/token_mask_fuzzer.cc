// libFuzzer target for token masks. The input is a GBNF grammar, optionally followed by
// kGbnfTextSeparator (gbnf_seeds.h) and choice bytes. Over a fixed vocabulary (every byte, and
// multi-byte tokens that cross rule boundaries), each step compares GrammarConstraint's mask with
// brute force (a token is allowed iff the text so far plus its bytes is a prefix the grammar
// can continue; the end token iff the text is a sentence), then syncs to a token picked by the
// next choice byte — allowed or not: a refused token must be refused by Sync with
// kInvalidArgument and leave the state unchanged. Nothing may crash, hang or exhaust memory.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/base/fuzz_assert.h"
#include "core/grammar/compiled_constraint.h"
#include "core/grammar/fuzz/gbnf_seeds.h"
#include "core/grammar/gbnf_parser.h"
#include "core/grammar/grammar_matcher.h"

namespace tandem {
namespace {

constexpr size_t kMaxSteps = 64;

std::shared_ptr<const ConstraintVocabulary> FuzzVocabulary() {
  static const auto* vocab = [] {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b) bytes.push_back(std::string(1, static_cast<char>(b)));
    for (const char* t : {"ab", "abc", "\"}", "\":", "\",\"", "[[", "]]", "],", "{\"", "  ",
                          "\n\n", "true", "12", "1,", ", ", "a\"", "\\n", "\xC3\xA9", "\xE2\x82",
                          "x ::", "()", ")*", "::=", "aa", "aaa", "aaaa"}) {
      bytes.push_back(t);
    }
    bytes.push_back("");
    bytes.push_back("</s>");
    const int32_t end = static_cast<int32_t>(bytes.size()) - 1;
    return new std::shared_ptr<const ConstraintVocabulary>(
        std::make_shared<const ConstraintVocabulary>(
            ConstraintVocabulary::FromBytes(std::move(bytes), {end})));
  }();
  return *vocab;
}

GrammarLimits FuzzLimits() {
  GrammarLimits limits;
  limits.max_rules = 500;
  limits.max_elements = 20000;
  limits.max_repeat = 50;
  limits.max_nesting = 32;
  return limits;
}

// Whether `token` may follow `text`, by brute force.
bool NaiveAllowed(GrammarMatcher& m, const MatcherState& base, const ConstraintVocabulary& v,
                  int32_t token) {
  if (token == v.end_ids[0]) return m.CanEnd(base);
  const std::string& bytes = v.token_bytes[token];
  if (bytes.empty()) return false;
  MatcherState s = base;
  for (char c : bytes) {
    if (!m.Advance(s, static_cast<uint8_t>(c), &s)) return false;
  }
  return true;
}

}  // namespace
}  // namespace tandem

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find(fuzzing::kGbnfTextSeparator);
  const absl::string_view choices =
      split == absl::string_view::npos
          ? absl::string_view()
          : input.substr(split + fuzzing::kGbnfTextSeparator.size(), kMaxSteps);
  absl::StatusOr<Grammar> grammar = ParseGbnf(input.substr(0, split), FuzzLimits());
  if (!grammar.ok()) return 0;
  const std::shared_ptr<const ConstraintVocabulary> vocab = FuzzVocabulary();
  absl::StatusOr<std::shared_ptr<const CompiledConstraint>> compiled =
      CompileGrammarConstraint(*grammar, vocab);
  TANDEM_FUZZ_ASSERT(compiled.ok(), "compile failed: %s", compiled.status().ToString().c_str());
  std::unique_ptr<TokenConstraint> constraint = NewTokenConstraint(*compiled);
  GrammarMatcher naive(*grammar);
  MatcherState base = naive.Start();
  std::vector<int32_t> tokens;
  const int32_t n = static_cast<int32_t>(vocab->token_bytes.size());
  TokenMask mask;
  for (unsigned char choice : choices) {
    if (naive.overflowed()) break;  // past the matcher's bounds both sides may refuse
    constraint->FillMask(&mask);
    std::vector<int32_t> allowed;
    for (int32_t t = 0; t < n; ++t) {
      const bool expected = NaiveAllowed(naive, base, *vocab, t);
      if (naive.overflowed()) return 0;
      TANDEM_FUZZ_ASSERT(mask.Allowed(t) == expected, "token %d: mask %d, brute force %d", t,
                         mask.Allowed(t), expected);
      if (expected) allowed.push_back(t);
    }
    // Odd choices pick any token (often refused), even ones an allowed token.
    const bool any = (choice & 1) != 0 || allowed.empty();
    const int32_t token = any ? (choice * 7) % n : allowed[(choice >> 1) % allowed.size()];
    tokens.push_back(token);
    const absl::Status synced = constraint->Sync(tokens);
    if (!mask.Allowed(token)) {
      TANDEM_FUZZ_ASSERT(synced.code() == absl::StatusCode::kInvalidArgument,
                         "a refused token gave %s", synced.ToString().c_str());
      tokens.pop_back();
      continue;
    }
    TANDEM_FUZZ_ASSERT(synced.ok(), "an allowed token gave %s", synced.ToString().c_str());
    if (token == vocab->end_ids[0]) break;
    for (char c : vocab->token_bytes[token]) naive.Advance(base, static_cast<uint8_t>(c), &base);
  }
  return 0;
}
