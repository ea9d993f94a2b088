#include "core/tokenizer/pre_tokenizer.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

struct SplitCase {
  const char* family;
  std::string text;
  std::vector<std::string> pieces;
};

TEST(PreTokenizerTest, FamiliesSplitAsTheirTokenizersDo) {
  const std::vector<SplitCase> cases = {
      {"gpt-2", "Hello world  !", {"Hello", " world", " ", " !"}},
      {"gpt-2", "I'll 12345", {"I", "'ll", " 12345"}},
      {"llama-bpe", "I'LL 12345\n\n", {"I", "'LL", " ", "123", "45", "\n\n"}},
      {"qwen2", "ab 123", {"ab", " ", "1", "2", "3"}},
      {"starcoder", "x 42", {"x", " ", "4", "2"}},
      {"falcon", "a+=1234", {"a", "+=", "123", "4"}},
      {"deepseek-coder", "ab\n12", {"ab", "\n", "1", "2"}},
      {"deepseek-llm", "Hi 12, ok", {"Hi", " ", "12", ",", " ok"}},
  };
  for (const SplitCase& c : cases) {
    ASSERT_OK_AND_ASSIGN(std::vector<std::string> regexes, PreTokenizer::FamilyRegexes(c.family));
    ASSERT_OK_AND_ASSIGN(PreTokenizer pre, PreTokenizer::Create(regexes));
    std::vector<absl::string_view> pieces;
    ASSERT_OK(pre.Split(c.text, &pieces));
    EXPECT_THAT(std::vector<std::string>(pieces.begin(), pieces.end()), ElementsAreArray(c.pieces))
        << c.family << ": '" << c.text << "'";
  }
}

TEST(PreTokenizerTest, OnlyLlama3IgnoresMerges) {
  EXPECT_TRUE(PreTokenizer::FamilyIgnoresMerges("llama-bpe"));
  EXPECT_FALSE(PreTokenizer::FamilyIgnoresMerges("qwen2"));
  EXPECT_FALSE(PreTokenizer::FamilyIgnoresMerges("gpt-2"));
}

TEST(PreTokenizerTest, UnknownFamilyIsUnimplemented) {
  EXPECT_THAT(PreTokenizer::FamilyRegexes("tekken9"),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("'tekken9'")));
}

TEST(PreTokenizerTest, BadRegexIsInvalidArgument) {
  EXPECT_THAT(PreTokenizer::Create({"(unclosed"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'(unclosed'")));
}

TEST(PreTokenizerTest, KindsNameTheRegexThatMatched) {
  ASSERT_OK_AND_ASSIGN(PreTokenizer pre, PreTokenizer::Create({R"(\s+)", R"(\p{N}+)"}));
  std::vector<absl::string_view> pieces;
  std::vector<int> kinds;
  ASSERT_OK(pre.Split("ab 12c", &pieces, &kinds));
  EXPECT_THAT(std::vector<std::string>(pieces.begin(), pieces.end()),
              ElementsAreArray({"ab", " ", "12", "c"}));
  EXPECT_THAT(kinds, ElementsAreArray({-1, 0, 1, -1}));
}

}  // namespace
}  // namespace tandem
