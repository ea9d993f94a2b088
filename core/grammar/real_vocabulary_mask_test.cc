// Token masks on real vocabularies equal brute force along real outputs: each prefix of the
// encoded output gets the mask a token-by-token check of the whole vocabulary gives.
#include <string>
#include <vector>

#include "core/base/shared_data_test_util.h"
#include "core/base/status_matchers.h"
#include "core/grammar/compiled_constraint.h"
#include "core/grammar/constraint_grammar.h"
#include "core/grammar/grammar_matcher.h"
#include "core/tokenizer/tokenizer_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::IsOk;
using ::tandem::testing::SharedFile;

struct Walk {
  ConstraintSpec spec;
  std::string output;
};

std::vector<Walk> Walks() {
  return {
      {{ConstraintSpec::Kind::kJsonSchema,
        R"({"type":"object","properties":{"name":{"type":"string","maxLength":20},)"
        R"("email":{"type":"string","format":"email"},"age":{"type":"integer","minimum":0},)"
        R"("tags":{"type":"array","items":{"type":"string"}},"ok":{"type":"boolean"}},)"
        R"("required":["name","email","age","tags","ok"],"additionalProperties":false})"},
       R"({"name":"Ada Lovelace","email":"ada@example.com","age":36,"tags":["math","x"],"ok":true})"},
      {{ConstraintSpec::Kind::kJsonObject, ""}, R"({"a":[1,2.5,{"b":null}],"c":"d\n\u00e9"})"},
      // Bounded repetitions at and near their bounds (repeat_chains.h), escapes inside.
      {{ConstraintSpec::Kind::kJsonSchema,
        R"({"type":"object","properties":{"a":{"type":"string","maxLength":3},)"
        R"("b":{"type":"string","minLength":2,"maxLength":9},)"
        R"("c":{"type":"array","items":{"type":"integer"},"maxItems":3}},)"
        R"("required":["a","b","c"],"additionalProperties":false})"},
       R"({"a":"xyz","b":"q\"u\\o é","c":[1,22,333]})"},
      {{ConstraintSpec::Kind::kRegex, R"([A-Z][a-z]+, \d{4}-\d{2}-\d{2})"}, "Grace, 1906-12-09"},
  };
}

TEST(RealVocabularyMaskTest, MasksEqualBruteForceAlongEncodedOutputs) {
  LoadOptions options;
  options.pre_tokenizer = "gpt-2";
  ASSERT_OK_AND_ASSIGN(std::string path, SharedFile("models/vocab/ggml-vocab-starcoder.gguf"));
  ASSERT_OK_AND_ASSIGN(Tokenizer tokenizer, LoadTokenizer(path, options));
  auto vocab = std::make_shared<const ConstraintVocabulary>(
      ConstraintVocabulary::FromTokenizer(tokenizer, {*tokenizer.vocabulary().eos_id}));
  for (const Walk& walk : Walks()) {
    ASSERT_OK_AND_ASSIGN(Grammar grammar, GrammarForSpec(walk.spec));
    ASSERT_TRUE(GrammarMatches(grammar, walk.output)) << walk.output;
    ASSERT_OK_AND_ASSIGN(auto compiled, CompileConstraint(walk.spec, vocab));
    auto constraint = NewTokenConstraint(compiled);
    ASSERT_OK_AND_ASSIGN(std::vector<int32_t> ids, tokenizer.Encode(walk.output));
    GrammarMatcher naive(grammar);
    MatcherState base = naive.Start();
    std::string text;
    for (size_t i = 0; i <= ids.size(); ++i) {
      ASSERT_THAT(constraint->Sync(absl::MakeConstSpan(ids).first(i)), IsOk());
      TokenMask mask;
      constraint->FillMask(&mask);
      for (int32_t t = 0; t < constraint->vocab_size(); ++t) {
        const std::string& bytes = vocab->token_bytes[t];
        bool expected = !bytes.empty();
        MatcherState s = base;
        for (size_t j = 0; expected && j < bytes.size(); ++j) {
          expected = naive.Advance(s, static_cast<uint8_t>(bytes[j]), &s);
        }
        if (t == vocab->end_ids[0]) expected = naive.CanEnd(base);
        ASSERT_EQ(mask.Allowed(t), expected)
            << "token " << t << " '" << bytes << "' after '" << text << "'";
      }
      if (i == ids.size()) break;
      for (char c : vocab->token_bytes[ids[i]]) {
        ASSERT_TRUE(naive.Advance(base, static_cast<uint8_t>(c), &base));
      }
      text += vocab->token_bytes[ids[i]];
    }
  }
}

}  // namespace
}  // namespace tandem
