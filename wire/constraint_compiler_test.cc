#include "wire/constraint_compiler.h"

#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/tokenizer/vocabulary.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ids 0..3: "y", "e", "s", "no"; 4: a control token (no bytes); 5: "</s>" (an end id).
std::vector<std::string> Bytes() { return {"y", "e", "s", "no", "", "</s>"}; }

constexpr int32_t kEnd = 5;

std::vector<int32_t> Allowed(TokenConstraint& constraint) {
  TokenMask mask;
  constraint.FillMask(&mask);
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < constraint.vocab_size(); ++id) {
    if (mask.Allowed(id)) ids.push_back(id);
  }
  return ids;
}

const ConstraintSpec kYesOrNo{ConstraintSpec::Kind::kGrammar, R"(root ::= "yes" | "no")"};

TEST(ConstraintCompilerTest, AGrammarAllowsItsTokensAndTheEndIdsWhereItMayEnd) {
  ConstraintCompiler compiler(Bytes());
  EXPECT_EQ(compiler.vocab_size(), 6);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<TokenConstraint> c, compiler.New(kYesOrNo, {kEnd}));
  EXPECT_THAT(Allowed(*c), ElementsAre(0, 3));  // "y", "no"
  ASSERT_OK(c->Sync({0, 1}));
  EXPECT_THAT(Allowed(*c), ElementsAre(2));  // "s"
  ASSERT_OK(c->Sync({0, 1, 2}));
  EXPECT_THAT(Allowed(*c), ElementsAre(kEnd));
  ASSERT_OK(c->Sync({3}));
  EXPECT_THAT(Allowed(*c), ElementsAre(kEnd));
}

TEST(ConstraintCompilerTest, EachCallIsAFreshStateOfTheSameConstraint) {
  ConstraintCompiler compiler(Bytes());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<TokenConstraint> a, compiler.New(kYesOrNo, {kEnd}));
  ASSERT_OK(a->Sync({3}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<TokenConstraint> b, compiler.New(kYesOrNo, {kEnd}));
  EXPECT_THAT(Allowed(*b), ElementsAre(0, 3));
  EXPECT_THAT(Allowed(*a), ElementsAre(kEnd));
}

TEST(ConstraintCompilerTest, EndIdsOutsideTheVocabularyAreDroppedAndOrderDoesNotMatter) {
  ConstraintCompiler compiler(Bytes(), {.max_constraints = 4, .max_vocabularies = 1});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<TokenConstraint> c,
                       compiler.New(kYesOrNo, {99, kEnd, -1, kEnd}));
  ASSERT_OK(c->Sync({3}));
  EXPECT_THAT(Allowed(*c), ElementsAre(kEnd));
  // Another set of end ids is another vocabulary: the token 1 ("e") now ends the output.
  ASSERT_OK_AND_ASSIGN(c, compiler.New(kYesOrNo, {1}));
  ASSERT_OK(c->Sync({3}));
  EXPECT_THAT(Allowed(*c), ElementsAre(1));
  EXPECT_THAT(c->Sync({0, 1}), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ConstraintCompilerTest, WithoutEndIdsNothingEndsTheOutput) {
  ConstraintCompiler compiler(Bytes());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<TokenConstraint> c, compiler.New(kYesOrNo, {}));
  ASSERT_OK(c->Sync({3}));
  EXPECT_THAT(Allowed(*c), ::testing::IsEmpty());  // a dead end: the caller reports it
}

TEST(ConstraintCompilerTest, ABadGrammarIsInvalidArgumentAndNotCached) {
  ConstraintCompiler compiler(Bytes());
  EXPECT_THAT(compiler.New({ConstraintSpec::Kind::kGrammar, "root ::= missing"}, {kEnd}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("missing")));
  EXPECT_THAT(compiler.New({ConstraintSpec::Kind::kGrammar, "root ::= missing"}, {kEnd}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("missing")));
  EXPECT_THAT(compiler.New(ConstraintSpec(), {kEnd}),
              StatusIs(absl::StatusCode::kInvalidArgument, "no constraint to compile"));
}

// ConstraintBytesOf per token: control tokens between 0xFF marks, bytes holding 0xFF and the
// types a constraint never matches emptied.
TEST(ConstraintCompilerTest, DescribedBytesAreWhatAConstraintMatches) {
  v1::Vocabulary vocabulary;
  const std::pair<const char*, TokenType> tokens[] = {
      {"a", TokenType::kNormal},        {"<s>", TokenType::kControl}, {"?", TokenType::kUnknown},
      {"<x>", TokenType::kUserDefined}, {"\xFF", TokenType::kByte},   {"u", TokenType::kUnused}};
  for (const auto& [bytes, type] : tokens) {
    vocabulary.add_token_bytes(bytes);
    vocabulary.add_token_types(static_cast<int32_t>(type));
  }
  EXPECT_THAT(ConstraintCompiler::TokenBytes(vocabulary),
              ElementsAre("a", "\xFF<s>\xFF", "", "<x>", "", ""));
  vocabulary.clear_token_types();  // an old worker's: every token counts
  EXPECT_THAT(ConstraintCompiler::TokenBytes(vocabulary),
              ElementsAre("a", "<s>", "?", "<x>", "\xFF", "u"));
}

}  // namespace
}  // namespace tandem
