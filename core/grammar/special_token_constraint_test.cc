// Control tokens through the constraint vocabulary, on real vocabularies: a grammar that names
// a control token (SpecialTokenLiteral) allows exactly it there; a grammar that names none
// never allows one; tokens whose bytes hold 0xFF are never allowed.
#include <memory>
#include <string>
#include <vector>

#include "core/base/shared_data_test_util.h"
#include "core/base/status_matchers.h"
#include "core/grammar/compiled_constraint.h"
#include "core/grammar/grammar_builder.h"
#include "core/grammar/special_token.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::IsOk;
using ::tandem::testing::SharedFile;

constexpr absl::string_view kToolCalls = "[TOOL_CALLS]";

// The vocabulary at `path` with `extra` control tokens appended (a family's markers).
absl::StatusOr<Tokenizer> WithControlTokens(const std::string& path, const LoadOptions& options,
                                            const std::vector<std::string>& extra) {
  ASSIGN_OR_RETURN(Vocabulary vocab, LoadVocabulary(path, options));
  for (const std::string& text : extra) {
    vocab.tokens.push_back(text);
    vocab.types.push_back(TokenType::kControl);
    if (!vocab.scores.empty()) vocab.scores.push_back(0);
  }
  return Tokenizer::Create(std::move(vocab));
}

std::shared_ptr<const ConstraintVocabulary> VocabularyOf(const Tokenizer& tokenizer) {
  return std::make_shared<const ConstraintVocabulary>(
      ConstraintVocabulary::FromTokenizer(tokenizer, {*tokenizer.vocabulary().eos_id}));
}

// The allowed tokens after `prefix` (token ids).
TokenMask MaskAfter(std::shared_ptr<const CompiledConstraint> compiled,
                    const std::vector<int32_t>& prefix) {
  auto constraint = NewTokenConstraint(std::move(compiled));
  EXPECT_THAT(constraint->Sync(prefix), IsOk());
  TokenMask mask;
  constraint->FillMask(&mask);
  return mask;
}

Grammar Sequence(std::vector<GrammarExpr> parts) {
  GrammarBuilder builder;
  const int32_t root = builder.AddRule("root");
  EXPECT_THAT(builder.DefineRule(root, GrammarExpr::Sequence(std::move(parts))), IsOk());
  return *std::move(builder).Build(root);
}

TEST(SpecialTokenConstraintTest, ControlTokensGetMarkedBytesAndOthersKeepTheirs) {
  ASSERT_OK_AND_ASSIGN(std::string path, SharedFile("models/vocab/ggml-vocab-llama-spm.gguf"));
  ASSERT_OK_AND_ASSIGN(Tokenizer tokenizer, WithControlTokens(path, {}, {std::string(kToolCalls)}));
  auto vocab = VocabularyOf(tokenizer);
  const int32_t tool_calls = *tokenizer.TokenId(kToolCalls);
  EXPECT_EQ(vocab->token_bytes[tool_calls], SpecialTokenBytes(kToolCalls));
  EXPECT_EQ(vocab->token_bytes[*tokenizer.vocabulary().bos_id], SpecialTokenBytes("<s>"));
  EXPECT_EQ(vocab->token_bytes[*tokenizer.vocabulary().eos_id], "");  // an end id
  EXPECT_EQ(vocab->token_bytes[*tokenizer.vocabulary().unk_id], "");  // unknown
  EXPECT_EQ(vocab->token_bytes[*tokenizer.TokenId("<0xFF>")], "");    // byte 0xFF
  EXPECT_EQ(vocab->token_bytes[*tokenizer.TokenId("<0x41>")], "A");
  EXPECT_EQ(ConstraintBytesOf(TokenType::kUserDefined, "<tool_call>"), "<tool_call>");
  EXPECT_EQ(ConstraintBytesOf(TokenType::kControl, ""), "");
  EXPECT_EQ(ConstraintBytesOf(TokenType::kUnused, "x"), "");
}

TEST(SpecialTokenConstraintTest, ByteLevelTokensHoldingByte0xFFAreNeverAllowed) {
  LoadOptions options;
  options.pre_tokenizer = "gpt-2";
  ASSERT_OK_AND_ASSIGN(std::string path, SharedFile("models/vocab/ggml-vocab-gpt-2.gguf"));
  ASSERT_OK_AND_ASSIGN(Tokenizer tokenizer, LoadTokenizer(path, options));
  auto vocab = VocabularyOf(tokenizer);
  int holding = 0;
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (tokenizer.TokenBytes(id)->find('\xFF') == absl::string_view::npos) continue;
    ++holding;
    EXPECT_EQ(vocab->token_bytes[id], "") << id;
  }
  EXPECT_GE(holding, 1);
}

TEST(SpecialTokenConstraintTest, AGrammarNamingAControlTokenAllowsExactlyIt) {
  ASSERT_OK_AND_ASSIGN(std::string path, SharedFile("models/vocab/ggml-vocab-llama-spm.gguf"));
  ASSERT_OK_AND_ASSIGN(Tokenizer tokenizer,
                       WithControlTokens(path, {}, {std::string(kToolCalls), "[TOOL_CALLS"}));
  auto vocab = VocabularyOf(tokenizer);
  const int32_t tool_calls = *tokenizer.TokenId(kToolCalls);
  ASSERT_OK_AND_ASSIGN(
      auto compiled,
      CompileGrammarConstraint(
          Sequence({SpecialTokenLiteral(kToolCalls), GrammarExpr::Literal("[1]")}), vocab));
  const TokenMask start = MaskAfter(compiled, {});
  EXPECT_EQ(start.Count(), 1);
  EXPECT_TRUE(start.Allowed(tool_calls));
  const TokenMask after = MaskAfter(compiled, {tool_calls});
  EXPECT_TRUE(after.Allowed(*tokenizer.TokenId("[")));
  EXPECT_FALSE(after.Allowed(tool_calls));

  // Text or control token: both spellings may start.
  ASSERT_OK_AND_ASSIGN(auto either,
                       CompileGrammarConstraint(Sequence({TextOrSpecialToken(kToolCalls)}), vocab));
  const TokenMask either_start = MaskAfter(either, {});
  EXPECT_TRUE(either_start.Allowed(tool_calls));
  EXPECT_TRUE(either_start.Allowed(*tokenizer.TokenId("[")));
  EXPECT_FALSE(either_start.Allowed(*tokenizer.TokenId("[TOOL_CALLS")));
}

TEST(SpecialTokenConstraintTest, GrammarsThatNameNoControlTokenNeverAllowOne) {
  ASSERT_OK_AND_ASSIGN(std::string path, SharedFile("models/vocab/ggml-vocab-llama-spm.gguf"));
  ASSERT_OK_AND_ASSIGN(Tokenizer tokenizer,
                       WithControlTokens(path, {}, {std::string(kToolCalls), "<|python_tag|>"}));
  auto vocab = VocabularyOf(tokenizer);
  const Vocabulary& v = tokenizer.vocabulary();
  struct Walk {
    ConstraintSpec spec;
    std::string output;
  };
  const std::vector<Walk> walks = {
      {{ConstraintSpec::Kind::kRegex, "[\\s\\S]*"}, "Any text [TOOL_CALLS] <|python_tag|> ÿ"},
      {{ConstraintSpec::Kind::kGrammar, "root ::= [^\\x00]*"}, "more [TOOL_CALLS] text"},
  };
  for (const Walk& walk : walks) {
    ASSERT_OK_AND_ASSIGN(auto compiled, CompileConstraint(walk.spec, vocab));
    ASSERT_OK_AND_ASSIGN(std::vector<int32_t> ids, tokenizer.Encode(walk.output));
    for (size_t i = 0; i <= ids.size(); ++i) {
      const TokenMask mask =
          MaskAfter(compiled, std::vector<int32_t>(ids.begin(), ids.begin() + i));
      for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
        if (id == *v.eos_id || !mask.Allowed(id)) continue;
        ASSERT_NE(v.types[id], TokenType::kControl) << v.tokens[id] << " after " << i;
        ASSERT_EQ(tokenizer.TokenBytes(id)->find('\xFF'), absl::string_view::npos) << v.tokens[id];
      }
    }
  }
}

}  // namespace
}  // namespace tandem
