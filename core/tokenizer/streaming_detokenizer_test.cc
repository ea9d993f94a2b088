#include "core/tokenizer/streaming_detokenizer.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_replace.h"
#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/base/utf8.h"
#include "core/base/utf8_repair.h"
#include "core/tokenizer/tokenizer_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::IsOk;
using ::tandem::testing::IsOkAndHolds;
using ::tandem::testing::SharedFile;
using ::tandem::testing::StatusIs;

constexpr const char* kModels[] = {
    "models/stories260K/stories260K.gguf",         "models/stories260K/hf",
    "models/vocab/ggml-vocab-llama-spm.gguf",      "models/vocab/ggml-vocab-gpt-2.gguf",
    "models/vocab/ggml-vocab-deepseek-coder.gguf", "models/vocab/ggml-vocab-bert-bge.gguf",
};

// Mixed scripts, emoji (split into byte tokens by small vocabularies), CJK, spaces.
constexpr char kText[] =
    " Once upon a time \xF0\x9F\xA6\x99 there was a caf\xC3\xA9 in \xE5\x8C\x97\xE4\xBA\xAC, "
    "\xD0\xBF\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82!\n\n\tThe end "
    "\xF0\x9F\x98\x80\xF0\x9F\x98\x80";

absl::StatusOr<std::string> Stream(const Tokenizer& tok, const std::vector<int32_t>& ids,
                                   DecodeOptions options, bool* chunks_valid) {
  StreamingDetokenizer detok(&tok, options);
  std::string all;
  *chunks_valid = true;
  for (int32_t id : ids) {
    ASSIGN_OR_RETURN(std::string chunk, detok.Add(id));
    *chunks_valid = *chunks_valid && utf8::Validate(chunk).ok();
    all += chunk;
  }
  return all + detok.Flush();
}

class StreamingDetokenizerTest : public ::testing::TestWithParam<const char*> {};

TEST_P(StreamingDetokenizerTest, EncodedTextStreamsInWholeCharactersAndEqualsDecode) {
  ASSERT_OK_AND_ASSIGN(std::string path, SharedFile(GetParam()));
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, LoadTokenizer(path));
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> ids, tok.Encode(kText, {.add_special = true}));
  for (bool strip : {true, false}) {
    for (bool special : {true, false}) {
      const DecodeOptions options{.render_special = special, .strip_leading_space = strip};
      ASSERT_OK_AND_ASSIGN(std::string decoded, tok.Decode(ids, options));
      bool chunks_valid = false;
      EXPECT_THAT(Stream(tok, ids, options, &chunks_valid), IsOkAndHolds(decoded));
      EXPECT_TRUE(chunks_valid) << "a chunk split a character";
    }
  }
}

TEST_P(StreamingDetokenizerTest, RandomIdSequencesStreamToTheOneShotDecode) {
  ASSERT_OK_AND_ASSIGN(std::string path, SharedFile(GetParam()));
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, LoadTokenizer(path));
  std::mt19937 rng(1234);
  std::uniform_int_distribution<int32_t> any_id(0, tok.vocab_size() - 1);
  // Byte tokens make partial characters likely: draw some from the first 300 ids.
  std::uniform_int_distribution<int32_t> low_id(0, std::min(tok.vocab_size(), 300) - 1);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int32_t> ids(1 + trial % 40);
    for (int32_t& id : ids) id = (rng() % 2) ? any_id(rng) : low_id(rng);
    const DecodeOptions options{.render_special = trial % 3 == 0,
                                .strip_leading_space = trial % 2 == 0};
    ASSERT_OK_AND_ASSIGN(std::string decoded, tok.Decode(ids, options));
    bool chunks_valid = false;
    EXPECT_THAT(Stream(tok, ids, options, &chunks_valid),
                IsOkAndHolds(utf8::ReplaceInvalid(decoded)))
        << trial;
    EXPECT_TRUE(chunks_valid) << "a chunk is not well-formed UTF-8, trial " << trial;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, StreamingDetokenizerTest, ::testing::ValuesIn(kModels),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           name = name.substr(name.rfind('/') + 1);
                           if (name == "hf") name = "stories260K_hf";
                           for (char& c : name) {
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

TEST(StreamingDetokenizerBasicsTest, HoldsAPartialCharacterUntilItCompletes) {
  ASSERT_OK_AND_ASSIGN(std::string path, SharedFile("models/stories260K/stories260K.gguf"));
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, LoadTokenizer(path));
  StreamingDetokenizer detok(&tok);
  // <0xF0><0x9F><0xA6><0x99> is U+1F999; byte token ids are 3 + byte.
  EXPECT_THAT(detok.Add(3 + 0xF0), IsOkAndHolds(""));
  EXPECT_THAT(detok.Add(3 + 0x9F), IsOkAndHolds(""));
  EXPECT_THAT(detok.Add(3 + 0xA6), IsOkAndHolds(""));
  EXPECT_THAT(detok.Add(3 + 0x99), IsOkAndHolds("\xF0\x9F\xA6\x99"));
  EXPECT_THAT(detok.Add(3 + 0xE2), IsOkAndHolds(""));
  EXPECT_EQ(detok.Flush(), utf8::kReplacement);  // an unfinished character at the end
  EXPECT_EQ(detok.Flush(), "");
}

// Byte tokens (id 3 + byte) that can never form a character, as a sampler at a huge
// temperature draws them: each maximal ill-formed subpart streams as one U+FFFD the moment
// it turns invalid, as Hugging Face decodes. '~' stands for U+FFFD.
TEST(StreamingDetokenizerBasicsTest, InvalidBytesStreamAsReplacementCharacters) {
  ASSERT_OK_AND_ASSIGN(std::string path, SharedFile("models/stories260K/stories260K.gguf"));
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, LoadTokenizer(path));
  const int32_t a = tok.TokenId("a").value();
  struct Case {
    std::vector<int> bytes;  // -1 is the token "a"
    std::vector<std::string> pieces;
    std::string flushed;
  };
  const Case cases[] = {
      {{0x80, -1}, {"~", "a"}, ""},                          // a lone continuation byte
      {{0xC0, 0xAF}, {"~", "~"}, ""},                        // overlong
      {{0xED, 0xA0, 0x80}, {"", "~~", "~"}, ""},             // a surrogate
      {{0xF4, 0x90, 0x80, 0x80}, {"", "~~", "~", "~"}, ""},  // past U+10FFFF
      {{0xE2, 0x82, -1}, {"", "", "~a"}, ""},                // truncated, then ASCII
      {{-1, 0xF0, 0x9F}, {"a", "", ""}, "~"},                // truncated at the end
  };
  for (const Case& c : cases) {
    StreamingDetokenizer detok(&tok, {.strip_leading_space = false});
    for (size_t i = 0; i < c.bytes.size(); ++i) {
      const int32_t id = c.bytes[i] < 0 ? a : 3 + c.bytes[i];
      ASSERT_OK_AND_ASSIGN(std::string piece, detok.Add(id));
      EXPECT_EQ(absl::StrReplaceAll(piece, {{utf8::kReplacement, "~"}}), c.pieces[i])
          << "byte " << i << " of case " << ::testing::PrintToString(c.bytes);
    }
    EXPECT_EQ(absl::StrReplaceAll(detok.Flush(), {{utf8::kReplacement, "~"}}), c.flushed);
  }
}

TEST(StreamingDetokenizerBasicsTest, InvalidIdIsRejectedAndChangesNothing) {
  ASSERT_OK_AND_ASSIGN(std::string path, SharedFile("models/stories260K/stories260K.gguf"));
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, LoadTokenizer(path));
  StreamingDetokenizer detok(&tok);
  EXPECT_THAT(detok.Add(3 + 0xC3), IsOkAndHolds(""));
  EXPECT_THAT(detok.Add(512), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(detok.Add(3 + 0xA9), IsOkAndHolds("\xC3\xA9"));
}

TEST(StreamingDetokenizerBasicsTest, DropsTheDummyPrefixOnlyAtTheStart) {
  ASSERT_OK_AND_ASSIGN(std::string path, SharedFile("models/stories260K/stories260K.gguf"));
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, LoadTokenizer(path));
  const int32_t the = tok.TokenId("\xE2\x96\x81the").value();
  StreamingDetokenizer detok(&tok);
  EXPECT_THAT(detok.Add(1), IsOkAndHolds(""));  // BOS renders as nothing
  EXPECT_THAT(detok.Add(the), IsOkAndHolds("the"));
  EXPECT_THAT(detok.Add(the), IsOkAndHolds(" the"));
  StreamingDetokenizer continuation(&tok, {.strip_leading_space = false});
  EXPECT_THAT(continuation.Add(the), IsOkAndHolds(" the"));
}

}  // namespace
}  // namespace tandem
