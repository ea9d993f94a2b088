// Runs the GBNF fuzz entry point as an ordinary test over its seeds, deterministic hostile
// variants of them, and grammars built to be hostile (deep nesting, long runs of repetition
// operators, huge and stacked counts, many rules, broken UTF-8, the size limit), so builds
// without libFuzzer check the same properties.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/grammar/fuzz/gbnf_seeds.h"
#include "core/grammar/gbnf_parser.h"
#include "core/grammar/grammar_matcher.h"
#include "core/model/fuzz/seed_corpus.h"
#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace tandem {
namespace {

std::vector<std::string> HostileGrammars() {
  const std::string sep(fuzzing::kGbnfTextSeparator);
  std::string many_rules = "root ::= r0\n";
  for (int i = 0; i < 3000; ++i) absl::StrAppend(&many_rules, "r", i, " ::= \"x\" r", i + 1, "\n");
  absl::StrAppend(&many_rules, "r3000 ::= \"\"\n");
  std::string many_refs = "root ::=";
  for (int i = 0; i < 20000; ++i) absl::StrAppend(&many_refs, " u", i);
  return {
      "root ::= " + std::string(10000, '(') + "\"a\"" + std::string(10000, ')'),
      "root ::= " + std::string(63, '(') + "\"a\"" + std::string(63, ')') + sep + "a",
      "root ::= \"a\"" + std::string(100000, '*'),
      "root ::= \"a\"" + std::string(60, '?') + sep + "a",
      "root ::= (\"a\"{200}){200}" + sep + std::string(3000, 'a'),
      "root ::= ((\"ab\"{0,200}){0,200}){0,200}" + sep + std::string(1000, 'a'),
      "root ::= \"a\"{200}{200}{200}{200}",
      "root ::= [^\\x00-\\U0010FFFF]" + sep + "a",
      "root ::= (\"\" | \"\"*)*" + sep + "",
      "root ::= (\"a\" | \"a\" | \"aa\")*" + sep + std::string(4000, 'a'),
      "root ::= (x | y)*\nx ::= \"a\" | y\ny ::= \"a\" | \"\"" + sep + std::string(500, 'a'),
      many_rules + sep + std::string(3000, 'x'),
      many_refs,
      "root ::= \"" + std::string(kMaxGbnfBytes, 'a') + "\"",
      "root ::= \"" + std::string(kMaxGbnfBytes - 12, 'a') + "\"" + sep + "a",
      "root ::= \"\xf4\x90\x80\x80\" [\xc0\x80] \xff",
      "root ::= \"\\U0010FFFF\\uFFFF\\x00\" [\\U0010FFFF-\\U0010FFFF]" + sep +
          std::string("\xf4\x8f\xbf\xbf\xef\xbf\xbf\0\xf4\x8f\xbf\xbf", 12),
      "root ::= [\\x00-\\x7f]{10000}" + sep + std::string(10000, 'x'),
      std::string("root ::= \"a\0b\"\0", 15),
      // A repetition of a rule that matches only the empty string (a rule left without
      // alternatives once; found by the fuzzer).
      "root ::=  (\"d\" | e){ 1 ,  } \"x\"#2}{3} \"z\"{0}\ne ::=# [a-" + sep + "ddx",
  };
}

TEST(GbnfFuzzerReplayTest, KeepsItsPropertiesOnSeedsHostileVariantsAndHostileGrammars) {
  std::vector<fuzzing::Input> seeds;
  for (const std::string& seed : fuzzing::GbnfSeeds()) seeds.emplace_back(seed.begin(), seed.end());
  std::vector<fuzzing::Input> inputs =
      fuzzing::HostileVariants(seeds, /*per_seed=*/200, /*max_truncated=*/400, /*rng_seed=*/27);
  inputs.insert(inputs.end(), seeds.begin(), seeds.end());
  for (const std::string& hostile : HostileGrammars()) {
    inputs.emplace_back(hostile.begin(), hostile.end());
  }
  for (const fuzzing::Input& input : inputs) {
    ASSERT_EQ(LLVMFuzzerTestOneInput(input.data(), input.size()), 0);
  }
}

// The seeds start the fuzzer inside the format: each parses and matches its text, except the
// last two (token references, left recursion), which start it at the refusals.
TEST(GbnfFuzzerReplayTest, SeedsParseAndMatchTheirTexts) {
  const std::vector<std::string> seeds = fuzzing::GbnfSeeds();
  for (size_t i = 0; i < seeds.size(); ++i) {
    SCOPED_TRACE(seeds[i]);
    const absl::string_view seed = seeds[i];
    const size_t split = seed.find(fuzzing::kGbnfTextSeparator);
    ASSERT_NE(split, absl::string_view::npos);
    const absl::StatusOr<Grammar> grammar = ParseGbnf(seed.substr(0, split));
    if (i + 2 >= seeds.size()) {
      EXPECT_EQ(grammar.status().code(), absl::StatusCode::kInvalidArgument);
      continue;
    }
    ASSERT_TRUE(grammar.ok()) << grammar.status();
    EXPECT_TRUE(GrammarMatches(*grammar, seed.substr(split + fuzzing::kGbnfTextSeparator.size())));
  }
}

}  // namespace
}  // namespace tandem
