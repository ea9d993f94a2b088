#include "core/tokenizer/special_tokens.h"

#include "core/base/status_matchers.h"
#include "core/base/test_data.h"
#include "core/tokenizer/tokenizer_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;

TEST(EndOfTurnIdsTest, StoriesEndsWithEosOnly) {
  ASSERT_OK_AND_ASSIGN(std::string path,
                       testing::SharedFile("models/stories260K/stories260K.gguf"));
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, LoadTokenizer(path));
  EXPECT_THAT(EndOfTurnIds(tok), ElementsAre(2));
}

TEST(SpecialTokenTextTest, NamesTheTokenOrNothing) {
  ASSERT_OK_AND_ASSIGN(std::string path,
                       testing::SharedFile("models/stories260K/stories260K.gguf"));
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, LoadTokenizer(path));
  EXPECT_EQ(SpecialTokenText(tok, 1), "<s>");
  EXPECT_EQ(SpecialTokenText(tok, 2), "</s>");
  EXPECT_EQ(SpecialTokenText(tok, std::nullopt), "");
  EXPECT_EQ(SpecialTokenText(tok, 512), "");
}

TEST(EndOfTurnIdsTest, ByteLevelVocabularyFindsEndOfText) {
  ASSERT_OK_AND_ASSIGN(std::string path,
                       testing::SharedFile("models/vocab/ggml-vocab-starcoder.gguf"));
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, LoadTokenizer(path));
  const std::vector<int32_t> ids = EndOfTurnIds(tok);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(tok.TokenId("<|endoftext|>"), std::optional<int32_t>(ids[0]));
}

}  // namespace
}  // namespace tandem
