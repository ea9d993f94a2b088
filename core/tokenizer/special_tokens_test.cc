#include "core/tokenizer/special_tokens.h"

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/base/status_macros.h"
#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/model/gguf_reader.h"
#include "core/model/gguf_builder_test_util.h"
#include "core/model/mapped_file.h"
#include "core/tokenizer/gguf_vocabulary.h"
#include "core/tokenizer/tokenizer_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::GgufBuilder;
using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A SentencePiece vocabulary whose turn ends with a token no known format spells this way:
// only the file's declaration can make it a stop.
GgufBuilder TurnVocabulary() {
  GgufBuilder b;
  b.AddString("tokenizer.ggml.model", "llama")
      .AddStringArray("tokenizer.ggml.tokens",
                      {"<unk>", "<s>", "</s>", "a", "<turn_over>", "<msg_over>", "<|im_end|>"})
      .AddFloat32Array("tokenizer.ggml.scores", {0, 0, 0, -1, 0, 0, 0})
      .AddInt32Array("tokenizer.ggml.token_type", {2, 3, 3, 1, 3, 3, 3});
  return b;
}

absl::StatusOr<Tokenizer> FromBuilder(GgufBuilder& builder) {
  const std::vector<uint8_t> bytes = builder.Build();
  ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::Parse(MappedFile::FromBuffer(bytes, "test.gguf")));
  ASSIGN_OR_RETURN(Vocabulary vocab, VocabularyFromGguf(gguf));
  return Tokenizer::Create(std::move(vocab));
}

TEST(EndOfTurnIdsTest, GgufEotAndEomIdsStopWhateverTheirText) {
  GgufBuilder b = TurnVocabulary();
  b.AddUint32("tokenizer.ggml.eot_token_id", 4).AddUint32("tokenizer.ggml.eom_token_id", 5);
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, FromBuilder(b));
  EXPECT_THAT(tok.vocabulary().end_of_turn_ids, ElementsAre(4, 5));
  // EOS first, then the declared ids and the known texts (<|im_end|>) in id order.
  EXPECT_THAT(EndOfTurnIds(tok), ElementsAre(2, 4, 5, 6));
}

TEST(EndOfTurnIdsTest, WithoutDeclarationsOnlyKnownTextsStop) {
  GgufBuilder b = TurnVocabulary();
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, FromBuilder(b));
  EXPECT_THAT(EndOfTurnIds(tok), ElementsAre(2, 6));
}

TEST(EndOfTurnIdsTest, GgufEotIdEqualToEosIsListedOnce) {
  GgufBuilder b = TurnVocabulary();
  b.AddUint32("tokenizer.ggml.eos_token_id", 6).AddUint32("tokenizer.ggml.eot_token_id", 6);
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, FromBuilder(b));
  EXPECT_THAT(EndOfTurnIds(tok), ElementsAre(6));
}

TEST(EndOfTurnIdsTest, GgufEotIdOutsideTheVocabularyIsDataLoss) {
  GgufBuilder b = TurnVocabulary();
  b.AddUint32("tokenizer.ggml.eot_token_id", 7);
  EXPECT_THAT(FromBuilder(b),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("'tokenizer.ggml.eot_token_id' = 7 is outside the vocabulary")));
}

// A Hugging Face folder: a byte-level tokenizer.json whose end of turn is "<turn_over>".
class HfFolderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("special_tokens_test." + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    Write("tokenizer.json", R"({
      "added_tokens": [{"id": 3, "content": "<eos>", "special": true},
                       {"id": 4, "content": "<turn_over>", "special": true}],
      "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
      "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}})");
    Write("tokenizer_config.json", R"({"eos_token": "<eos>"})");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  std::filesystem::path dir_;
};

TEST_F(HfFolderTest, GenerationConfigEosListStops) {
  Write("generation_config.json", R"({"eos_token_id": [4, 3]})");
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, LoadTokenizer(dir_.string()));
  EXPECT_THAT(tok.vocabulary().end_of_turn_ids, ElementsAre(4, 3));
  EXPECT_THAT(EndOfTurnIds(tok), ElementsAre(3, 4));
}

TEST_F(HfFolderTest, ConfigJsonEosListStopsToo) {
  Write("config.json", R"({"model_type": "llama", "eos_token_id": [3, 4]})");
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, LoadTokenizer(dir_.string()));
  EXPECT_THAT(EndOfTurnIds(tok), ElementsAre(3, 4));
}

TEST_F(HfFolderTest, WithoutGenerationConfigOnlyEosStops) {
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, LoadTokenizer(dir_.string()));
  EXPECT_THAT(EndOfTurnIds(tok), ElementsAre(3));
}

TEST_F(HfFolderTest, BrokenGenerationConfigNamesTheFile) {
  Write("generation_config.json", R"({"eos_token_id": [4, 9]})");
  EXPECT_THAT(
      LoadTokenizer(dir_.string()),
      StatusIs(absl::StatusCode::kDataLoss, HasSubstr("generation_config.json: eos_token_id "
                                                      "9 is outside the vocabulary of 5 tokens")));
}

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
