#include "core/tokenizer/legacy_vocabulary.h"

#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "core/base/status_matchers.h"
#include "core/tokenizer/tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::IsOkAndHolds;
using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Protobuf wire-format helpers for hand-made tokenizer.model files.
std::string Varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string Bytes(int field, const std::string& bytes) {
  return Varint(field << 3 | 2) + Varint(bytes.size()) + bytes;
}
std::string VarintField(int field, uint64_t v) { return Varint(field << 3) + Varint(v); }
std::string Piece(const std::string& text, float score, int type) {
  std::string fixed(4, '\0');
  std::memcpy(fixed.data(), &score, 4);
  return Bytes(1, Bytes(1, text) + Varint(2 << 3 | 5) + fixed + VarintField(3, type));
}

std::string TinyModel(int model_type) {
  return Piece("<unk>", 0, 2) + Piece("<s>", 0, 3) + Piece("</s>", 0, 3) +
         Piece("\xE2\x96\x81", -1, 1) + Piece("a", -2, 1) + Piece("b", -3, 1) +
         Piece(
             "\xE2\x96\x81"
             "a",
             -4, 1) +
         Piece("ab", -0.5, 1) + Bytes(2, VarintField(3, model_type));
}

TEST(SentencePieceModelTest, ReadsPiecesScoresAndTypes) {
  ASSERT_OK_AND_ASSIGN(Vocabulary vocab, VocabularyFromSentencePiece(TinyModel(2)));
  EXPECT_EQ(vocab.tokens.size(), 8u);
  EXPECT_EQ(vocab.types[0], TokenType::kUnknown);
  EXPECT_EQ(vocab.types[1], TokenType::kControl);
  EXPECT_FLOAT_EQ(vocab.scores[7], -0.5f);
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Tokenizer::Create(vocab));
  // "ab" (score -0.5) beats "▁a" (-4): ▁ + ab.
  EXPECT_THAT(tok.Encode("ab"), IsOkAndHolds(ElementsAre(3, 7)));
  EXPECT_THAT(tok.Encode("ab", {.add_special = true}), IsOkAndHolds(ElementsAre(1, 3, 7)));
}

TEST(SentencePieceModelTest, UnigramIsUnimplemented) {
  EXPECT_THAT(VocabularyFromSentencePiece(TinyModel(1)),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("model type 1")));
}

TEST(SentencePieceModelTest, TruncatedFileIsDataLoss) {
  const std::string model = TinyModel(2);
  EXPECT_THAT(VocabularyFromSentencePiece(model.substr(0, 20)),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("malformed SentencePiece model")));
  EXPECT_THAT(VocabularyFromSentencePiece(""), StatusIs(absl::StatusCode::kDataLoss));
}

TEST(Gpt2FilesTest, ReadsEncoderAndMerges) {
  ASSERT_OK_AND_ASSIGN(
      Vocabulary vocab,
      VocabularyFromGpt2Files(R"({"a": 0, "b": 1, "ab": 2, "\u0120": 3, "\u0120ab": 4})",
                              "#version: 0.2\na b\n\xC4\xA0 ab\n", "gpt-2"));
  EXPECT_EQ(vocab.merges.size(), 2u);
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Tokenizer::Create(vocab));
  EXPECT_THAT(tok.Encode("ab ab"), IsOkAndHolds(ElementsAre(2, 4)));
}

TEST(Gpt2FilesTest, MalformedFilesAreDataLossNamingTheCulprit) {
  EXPECT_THAT(VocabularyFromGpt2Files("[1]", "", "gpt-2"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("not a JSON object")));
  EXPECT_THAT(VocabularyFromGpt2Files(R"({"a": 0, "b": 5})", "", "gpt-2"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("'b'")));
  EXPECT_THAT(VocabularyFromGpt2Files(R"({"a": 0, "b": 1})", "a b\nab\n", "gpt-2"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("vocab.bpe line 2")));
  EXPECT_THAT(VocabularyFromGpt2Files(R"({"a": 0})", "", "nope"),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("'nope'")));
}

}  // namespace
}  // namespace tandem
