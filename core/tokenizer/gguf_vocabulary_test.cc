#include "core/tokenizer/gguf_vocabulary.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "core/base/status_macros.h"
#include "core/base/status_matchers.h"
#include "core/model/gguf_reader.h"
#include "core/model/gguf_builder_test_util.h"
#include "core/model/mapped_file.h"
#include "core/tokenizer/tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::GgufBuilder;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

absl::StatusOr<Vocabulary> FromBuilder(GgufBuilder& builder) {
  const std::vector<uint8_t> bytes = builder.Build();
  ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::Parse(MappedFile::FromBuffer(bytes, "test.gguf")));
  return VocabularyFromGguf(gguf);
}

GgufBuilder Gpt2() {
  GgufBuilder b;
  b.AddString("tokenizer.ggml.model", "gpt2")
      .AddStringArray("tokenizer.ggml.tokens", {"a", "b", "ab"})
      .AddStringArray("tokenizer.ggml.merges", {"a b"});
  return b;
}

TEST(GgufVocabularyTest, ReadsByteLevelDefaults) {
  GgufBuilder b = Gpt2();
  b.AddUint32("tokenizer.ggml.padding_token_id", 0xFFFFFFFFu)
      .AddUint32("tokenizer.ggml.eos_token_id", 2)
      .AddString("tokenizer.ggml.pre", "llama-bpe");
  ASSERT_OK_AND_ASSIGN(Vocabulary vocab, FromBuilder(b));
  EXPECT_EQ(vocab.encoding, TextEncoding::kByteLevel);
  EXPECT_EQ(vocab.pad_id, std::nullopt);
  EXPECT_EQ(vocab.eos_id, 2);
  EXPECT_TRUE(vocab.ignore_merges);
  EXPECT_FALSE(vocab.add_bos);
}

TEST(GgufVocabularyTest, ReadsSentencePieceDefaults) {
  GgufBuilder b;
  b.AddString("tokenizer.ggml.model", "llama")
      .AddStringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"})
      .AddFloat32Array("tokenizer.ggml.scores", {0, 0, 0, -1})
      .AddInt32Array("tokenizer.ggml.token_type", {2, 3, 3, 1})
      .AddBool("tokenizer.ggml.add_space_prefix", false);
  ASSERT_OK_AND_ASSIGN(Vocabulary vocab, FromBuilder(b));
  EXPECT_EQ(vocab.model, MergeModel::kScores);
  EXPECT_EQ(vocab.space_prefix, SpacePrefix::kNever);
  EXPECT_TRUE(vocab.add_bos);
  EXPECT_EQ(vocab.bos_id, 1);
  EXPECT_EQ(vocab.types[0], TokenType::kUnknown);
}

struct ErrorCase {
  const char* name;
  GgufBuilder builder;
  absl::StatusCode code;
  const char* message;
};

TEST(GgufVocabularyTest, BadMetadataNamesTheKey) {
  GgufBuilder no_model;
  no_model.AddStringArray("tokenizer.ggml.tokens", {"a"});
  GgufBuilder t5;
  t5.AddString("tokenizer.ggml.model", "t5").AddStringArray("tokenizer.ggml.tokens", {"a"});
  GgufBuilder no_tokens;
  no_tokens.AddString("tokenizer.ggml.model", "gpt2");
  GgufBuilder unknown_pre = Gpt2();
  unknown_pre.AddString("tokenizer.ggml.pre", "martian");
  GgufBuilder bad_bos = Gpt2();
  bad_bos.AddUint32("tokenizer.ggml.bos_token_id", 3);
  GgufBuilder bad_types = Gpt2();
  bad_types.AddInt32Array("tokenizer.ggml.token_type", {1, 1});
  std::vector<ErrorCase> cases = {
      {"no model", no_model, absl::StatusCode::kDataLoss, "'tokenizer.ggml.model'"},
      {"t5", t5, absl::StatusCode::kUnimplemented, "'t5'"},
      {"no tokens", no_tokens, absl::StatusCode::kDataLoss, "'tokenizer.ggml.tokens'"},
      {"unknown pre", unknown_pre, absl::StatusCode::kUnimplemented, "'martian'"},
      {"bos out of range", bad_bos, absl::StatusCode::kDataLoss, "BOS token id 3"},
      {"types size", bad_types, absl::StatusCode::kDataLoss, "'tokenizer.ggml.token_type'"},
  };
  for (ErrorCase& c : cases) {
    EXPECT_THAT(FromBuilder(c.builder), StatusIs(c.code, HasSubstr(c.message))) << c.name;
  }
}

// llama.cpp's rule for Phi-3 files, which keep no strip attributes: every special token but
// <unk>, <s> and <|endoftext|> (and </s>) absorbs the whitespace after it.
TEST(GgufVocabularyTest, Phi3SpecialTokensStripTheWhitespaceAfterThem) {
  const auto phi3 = [](absl::string_view arch, absl::string_view name) {
    GgufBuilder b;
    b.AddString("general.architecture", arch)
        .AddString("general.name", name)
        .AddString("tokenizer.ggml.model", "llama")
        .AddStringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>",
                                                  "\xE2\x96\x81"
                                                  "a",
                                                  "<|endoftext|>", "<|user|>", "<|end|>", "<tool>"})
        .AddFloat32Array("tokenizer.ggml.scores", {0, 0, 0, -1, 0, 0, 0, 0})
        .AddInt32Array("tokenizer.ggml.token_type", {2, 3, 3, 1, 3, 3, 3, 4});
    return b;
  };
  GgufBuilder by_arch = phi3("phi3", "tiny");
  ASSERT_OK_AND_ASSIGN(Vocabulary vocab, FromBuilder(by_arch));
  EXPECT_THAT(vocab.rstrip_ids, ::testing::ElementsAre(2, 5, 6, 7));
  GgufBuilder by_name = phi3("llama", "Phi-3-mini-4k-instruct");
  ASSERT_OK_AND_ASSIGN(Vocabulary named, FromBuilder(by_name));
  EXPECT_THAT(named.rstrip_ids, ::testing::ElementsAre(2, 5, 6, 7));
  GgufBuilder other = phi3("llama", "tiny");
  ASSERT_OK_AND_ASSIGN(Vocabulary plain, FromBuilder(other));
  EXPECT_TRUE(plain.rstrip_ids.empty());
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Tokenizer::Create(vocab));
  EXPECT_THAT(tok.Encode("<|user|>\na<|end|>\n", {.parse_special = true}),
              ::tandem::testing::IsOkAndHolds(::testing::ElementsAre(5, 3, 6)));
}

// Gemma's SentencePiece as its GGUF files store it: <pad> <eos> <bos> <unk> first, no dummy
// prefix (add_space_prefix false), byte fallback, and chat tokens that are control tokens.
TEST(GgufVocabularyTest, GemmaSentencePieceHasNoDummyPrefixAndFallsBackToBytes) {
  std::vector<std::string> tokens = {"<pad>",           "<eos>",         "<bos>", "<unk>",
                                     "<start_of_turn>", "<end_of_turn>", "\n"};
  std::vector<int32_t> types = {3, 3, 3, 2, 3, 3, 1};
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(absl::StrFormat("<0x%02X>", b));
    types.push_back(6);
  }
  const int32_t first_word = static_cast<int32_t>(tokens.size());
  for (const char* t : {"h", "i", "hi", "\xE2\x96\x81", "\xE2\x96\x81hi"}) {
    tokens.push_back(t);
    types.push_back(1);
  }
  std::vector<float> scores(tokens.size(), 0.0f);
  scores[first_word + 2] = -1;  // "hi"
  scores[first_word + 4] = -2;  // "▁hi"
  GgufBuilder b;
  b.AddString("tokenizer.ggml.model", "llama")
      .AddStringArray("tokenizer.ggml.tokens", tokens)
      .AddFloat32Array("tokenizer.ggml.scores", scores)
      .AddInt32Array("tokenizer.ggml.token_type", types)
      .AddUint32("tokenizer.ggml.bos_token_id", 2)
      .AddUint32("tokenizer.ggml.eos_token_id", 1)
      .AddUint32("tokenizer.ggml.unknown_token_id", 3)
      .AddUint32("tokenizer.ggml.padding_token_id", 0)
      .AddBool("tokenizer.ggml.add_space_prefix", false)
      .AddBool("tokenizer.ggml.add_bos_token", true);
  ASSERT_OK_AND_ASSIGN(Vocabulary vocab, FromBuilder(b));
  EXPECT_EQ(vocab.space_prefix, SpacePrefix::kNever);
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Tokenizer::Create(vocab));
  const int32_t hi = first_word + 2, space_hi = first_word + 4;
  // No '▁' before "hi" at the start or after <start_of_turn>; "é" has no token: its bytes.
  EXPECT_THAT(tok.Encode("<start_of_turn>hi\nhi hi\xC3\xA9<end_of_turn>",
                         {.add_special = true, .parse_special = true}),
              ::tandem::testing::IsOkAndHolds(
                  ::testing::ElementsAre(2, 4, hi, 6, hi, space_hi, 7 + 0xC3, 7 + 0xA9, 5)));
  // User text never becomes a control token.
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> user, tok.Encode("<end_of_turn>"));
  EXPECT_EQ(std::count(user.begin(), user.end(), 5), 0);
  EXPECT_THAT(tok.Decode({2, 4, hi, 6, hi, space_hi, 5}),
              ::tandem::testing::IsOkAndHolds("hi\nhi hi"));
}

}  // namespace
}  // namespace tandem
