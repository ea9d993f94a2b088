#include "core/tokenizer/tokenizer.h"

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/base/json.h"
#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/tokenizer/tokenizer_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::IsOkAndHolds;
using ::tandem::testing::SharedFile;
using ::tandem::testing::StatusIs;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::Not;

absl::StatusOr<Tokenizer> Load(const std::string& relative, LoadOptions options = {}) {
  ASSIGN_OR_RETURN(std::string path, SharedFile(relative));
  return LoadTokenizer(path, options);
}

constexpr char kStoriesGguf[] = "models/stories260K/stories260K.gguf";
constexpr char kStoriesHf[] = "models/stories260K/hf";
constexpr char kLlamaSpm[] = "models/vocab/ggml-vocab-llama-spm.gguf";
constexpr char kGpt2[] = "models/vocab/ggml-vocab-gpt-2.gguf";
constexpr char kDeepSeekCoder[] = "models/vocab/ggml-vocab-deepseek-coder.gguf";

TEST(TokenizerTest, GgufAndHuggingFaceStoriesGiveTheGoldenPromptIds) {
  ASSERT_OK_AND_ASSIGN(std::string golden_path, SharedFile("models/golden.json"));
  std::ifstream in(golden_path);
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_OK_AND_ASSIGN(json::Value golden, json::Parse(text.str()));
  ASSERT_OK_AND_ASSIGN(Tokenizer gguf, Load(kStoriesGguf));
  ASSERT_OK_AND_ASSIGN(Tokenizer hf, Load(kStoriesHf));
  const json::Array& cases =
      golden.as_object().Find("stories260K")->as_object().Find("cases")->as_array();
  ASSERT_GE(cases.size(), 4u);
  for (const json::Value& c : cases) {
    const std::string& prompt = c.as_object().Find("prompt")->as_string();
    std::vector<int32_t> expected;
    for (const json::Value& id : c.as_object().Find("prompt_ids")->as_array()) {
      expected.push_back(static_cast<int32_t>(id.as_int()));
    }
    EXPECT_THAT(gguf.Encode(prompt, {.add_special = true}), IsOkAndHolds(expected)) << prompt;
    EXPECT_THAT(hf.Encode(prompt, {.add_special = true}), IsOkAndHolds(expected)) << prompt;
    EXPECT_THAT(gguf.Decode(expected), IsOkAndHolds(prompt));
    EXPECT_THAT(hf.Decode(expected), IsOkAndHolds(prompt));
  }
}

TEST(TokenizerTest, GgufAndHuggingFaceStoriesShareAFingerprint) {
  ASSERT_OK_AND_ASSIGN(Tokenizer gguf, Load(kStoriesGguf));
  ASSERT_OK_AND_ASSIGN(Tokenizer hf, Load(kStoriesHf));
  ASSERT_OK_AND_ASSIGN(Tokenizer llama, Load(kLlamaSpm));
  EXPECT_EQ(gguf.fingerprint(), hf.fingerprint());
  EXPECT_EQ(gguf.fingerprint().size(), 16u);
  EXPECT_NE(gguf.fingerprint(), llama.fingerprint());
}

TEST(TokenizerTest, ControlTokensAreParsedOnlyWhenAsked) {
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Load(kStoriesGguf));
  EXPECT_THAT(tok.Encode("<s>", {.parse_special = true}), IsOkAndHolds(ElementsAre(1)));
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> plain, tok.Encode("<s>"));
  EXPECT_THAT(plain, Not(Contains(1)));
  EXPECT_THAT(tok.Decode(plain), IsOkAndHolds("<s>"));
}

TEST(TokenizerTest, ChatTemplateOutputKeepsControlTokensWhole) {
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Load(kDeepSeekCoder));
  const std::string bos =
      "<\xEF\xBD\x9C"
      "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> ids,
                       tok.Encode(bos + "Hi" + bos, {.parse_special = true}));
  EXPECT_THAT(ids, ElementsAre(32013, 11041, 32013));
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> user_text, tok.Encode(bos));
  EXPECT_THAT(user_text, Not(Contains(32013)));
  EXPECT_THAT(tok.Decode(ids, {.render_special = true}), IsOkAndHolds(bos + "Hi" + bos));
  EXPECT_THAT(tok.Decode(ids), IsOkAndHolds("Hi"));
}

TEST(TokenizerTest, UserDefinedTokensAreAlwaysParsed) {
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Load(kDeepSeekCoder));
  EXPECT_THAT(tok.Encode("<|User|>"), IsOkAndHolds(ElementsAre(32019)));
  EXPECT_THAT(tok.Decode({32019}), IsOkAndHolds("<|User|>"));
}

TEST(TokenizerTest, SentencePieceAddsTheDummyPrefixAfterEverySpecialToken) {
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Load(kLlamaSpm));
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> a, tok.Encode("Hello"));
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> b, tok.Encode("</s>Hello", {.parse_special = true}));
  ASSERT_EQ(b.size(), a.size() + 1);
  EXPECT_EQ(b[0], 2);
  EXPECT_EQ(std::vector<int32_t>(b.begin() + 1, b.end()), a);
}

struct BosCase {
  const char* model;
  std::vector<int32_t> expected_prefix;
};

TEST(TokenizerTest, AddSpecialFollowsTheMetadata) {
  for (const BosCase& c : std::vector<BosCase>{
           {kLlamaSpm, {1}}, {kDeepSeekCoder, {32013}}, {kGpt2, {}}, {kStoriesHf, {1}}}) {
    ASSERT_OK_AND_ASSIGN(Tokenizer tok, Load(c.model));
    ASSERT_OK_AND_ASSIGN(std::vector<int32_t> with, tok.Encode("a b", {.add_special = true}));
    ASSERT_OK_AND_ASSIGN(std::vector<int32_t> without, tok.Encode("a b"));
    std::vector<int32_t> expected = c.expected_prefix;
    expected.insert(expected.end(), without.begin(), without.end());
    EXPECT_EQ(with, expected) << c.model;
  }
}

TEST(TokenizerTest, EmptyTextHasNoTokensButBos) {
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Load(kLlamaSpm));
  EXPECT_THAT(tok.Encode(""), IsOkAndHolds(ElementsAre()));
  EXPECT_THAT(tok.Encode("", {.add_special = true}), IsOkAndHolds(ElementsAre(1)));
}

TEST(TokenizerTest, ByteFallbackCoversCharactersWithoutTokens) {
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Load(kStoriesGguf));
  // U+1F999 has no token in a 512-token vocabulary: its four bytes <0xF0><0x9F><0xA6><0x99>.
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> ids, tok.Encode("\xF0\x9F\xA6\x99"));
  EXPECT_THAT(ids, ElementsAre(tok.TokenId("\xE2\x96\x81").value(), 3 + 0xF0, 3 + 0x9F, 3 + 0xA6,
                               3 + 0x99));
  EXPECT_THAT(tok.Decode(ids), IsOkAndHolds("\xF0\x9F\xA6\x99"));
}

TEST(TokenizerTest, DecodeDropsOnlyTheDummyPrefixSpace) {
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Load(kStoriesGguf));
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> ids, tok.Encode("Once upon", {.add_special = true}));
  EXPECT_THAT(tok.Decode(ids), IsOkAndHolds("Once upon"));
  EXPECT_THAT(tok.Decode(ids, {.strip_leading_space = false}), IsOkAndHolds(" Once upon"));
  EXPECT_THAT(tok.Decode(ids, {.render_special = true}), IsOkAndHolds("<s> Once upon"));
  ASSERT_OK_AND_ASSIGN(Tokenizer gpt2, Load(kGpt2));
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> gpt2_ids, gpt2.Encode(" Once"));
  EXPECT_THAT(gpt2.Decode(gpt2_ids), IsOkAndHolds(" Once"));
}

TEST(TokenizerTest, TokenBytesAreTheTextATokenStandsFor) {
  ASSERT_OK_AND_ASSIGN(Tokenizer stories, Load(kStoriesGguf));
  EXPECT_THAT(stories.TokenBytes(3 + 'A'), IsOkAndHolds("A"));
  EXPECT_THAT(stories.TokenBytes(stories.TokenId("\xE2\x96\x81the").value()), IsOkAndHolds(" the"));
  EXPECT_THAT(stories.TokenBytes(1), IsOkAndHolds("<s>"));
  ASSERT_OK_AND_ASSIGN(Tokenizer gpt2, Load(kGpt2));
  EXPECT_THAT(gpt2.TokenBytes(gpt2.TokenId("\xC4\xA0the").value()), IsOkAndHolds(" the"));
  EXPECT_THAT(gpt2.TokenBytes(gpt2.TokenId("\xC4\x8A").value()), IsOkAndHolds("\n"));
}

TEST(TokenizerTest, IdsOutsideTheVocabularyAreInvalidArguments) {
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Load(kStoriesGguf));
  EXPECT_THAT(tok.Decode({5, 512}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("token id 512 is outside")));
  EXPECT_THAT(tok.Decode({-1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("token id -1 is outside")));
  EXPECT_THAT(tok.TokenBytes(512), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(TokenizerTest, InvalidUtf8IsRejectedWithItsOffset) {
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Load(kGpt2));
  EXPECT_THAT(tok.Encode("abc\xC3("),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not valid UTF-8 at byte 3")));
}

TEST(TokenizerTest, UnknownPreTokenizerIsUnimplemented) {
  Vocabulary vocab;
  vocab.encoding = TextEncoding::kByteLevel;
  vocab.model = MergeModel::kRanks;
  vocab.tokens = {"a", "b", "ab"};
  vocab.types.assign(3, TokenType::kNormal);
  vocab.merges = {{"a", "b"}};
  vocab.pre_tokenizer = "klingon";
  EXPECT_THAT(Tokenizer::Create(vocab),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("'klingon'")));
  vocab.pre_tokenizer = "gpt-2";
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Tokenizer::Create(vocab));
  EXPECT_THAT(tok.Encode("abba"), IsOkAndHolds(ElementsAre(2, 1, 0)));
}

TEST(TokenizerTest, MergeOfUnknownTokensIsDataLoss) {
  Vocabulary vocab;
  vocab.encoding = TextEncoding::kByteLevel;
  vocab.model = MergeModel::kRanks;
  vocab.tokens = {"a", "b"};
  vocab.types.assign(2, TokenType::kNormal);
  vocab.merges = {{"a", "b"}};
  EXPECT_THAT(Tokenizer::Create(vocab),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("merge 0 'a b'")));
}

TEST(TokenizerTest, MissingModelIsNotFound) {
  EXPECT_THAT(LoadTokenizer("/nonexistent/model.gguf"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/model.gguf")));
}

}  // namespace
}  // namespace tandem
