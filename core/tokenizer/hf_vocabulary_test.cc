#include "core/tokenizer/hf_vocabulary.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
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

// A byte-level BPE: Ġ = ' ', with an added special token and a user-defined one.
constexpr char kByteLevel[] = R"({
  "added_tokens": [{"id": 5, "content": "<|im_start|>", "special": true},
                   {"id": 6, "content": "<tool>", "special": false}],
  "normalizer": null,
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\s?\\p{L}+|\\s+"}, "behavior": "Isolated",
       "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},
  "post_processor": {"type": "ByteLevel"},
  "model": {"type": "BPE", "ignore_merges": false,
            "vocab": {"a": 0, "b": 1, "ab": 2, "\u0120": 3, "\u0120ab": 4},
            "merges": [["a", "b"], "\u0120 ab"]}
})";

TEST(HfVocabularyTest, ByteLevelWithSplitRegexAndAddedTokens) {
  ASSERT_OK_AND_ASSIGN(Vocabulary vocab, VocabularyFromTokenizerJson(kByteLevel, ""));
  EXPECT_EQ(vocab.encoding, TextEncoding::kByteLevel);
  EXPECT_EQ(vocab.types[5], TokenType::kControl);
  EXPECT_EQ(vocab.types[6], TokenType::kUserDefined);
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Tokenizer::Create(vocab));
  EXPECT_THAT(tok.Encode("<|im_start|>ab ab<tool>", {.parse_special = true}),
              IsOkAndHolds(ElementsAre(5, 2, 4, 6)));
  EXPECT_THAT(tok.Decode({5, 2, 4, 6}, {.render_special = true}),
              IsOkAndHolds("<|im_start|>ab ab<tool>"));
}

TEST(HfVocabularyTest, ConfigDecidesBosAndEos) {
  const std::string config =
      R"({"add_bos_token": true, "add_eos_token": true, "bos_token": {"content": "<|im_start|>"},
          "eos_token": "<tool>"})";
  ASSERT_OK_AND_ASSIGN(Vocabulary vocab, VocabularyFromTokenizerJson(kByteLevel, config));
  EXPECT_EQ(vocab.bos_id, 5);
  EXPECT_EQ(vocab.eos_id, 6);
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Tokenizer::Create(vocab));
  EXPECT_THAT(tok.Encode("ab", {.add_special = true}), IsOkAndHolds(ElementsAre(5, 2, 6)));
}

// Llama 3's tokenizer.json: the template that adds <|begin_of_text|> sits in a Sequence after
// ByteLevel, and tokenizer_config.json has no add_bos_token.
TEST(HfVocabularyTest, SequencePostProcessorWithATemplateAddsBos) {
  std::string json = kByteLevel;
  const std::string post = R"("post_processor": {"type": "ByteLevel"},)";
  json.replace(json.find(post), post.size(),
               R"("post_processor": {"type": "Sequence", "processors": [
                   {"type": "ByteLevel", "add_prefix_space": true},
                   {"type": "TemplateProcessing",
                    "single": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}},
                               {"Sequence": {"id": "A", "type_id": 0}}]}]},)");
  ASSERT_OK_AND_ASSIGN(Vocabulary vocab, VocabularyFromTokenizerJson(json, R"({})"));
  EXPECT_EQ(vocab.bos_id, 5);
  EXPECT_TRUE(vocab.add_bos);
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Tokenizer::Create(vocab));
  EXPECT_THAT(tok.Encode("ab", {.add_special = true}), IsOkAndHolds(ElementsAre(5, 2)));
}

// Phi-3: its chat tokens rstrip, so the newline a template writes after <|user|> is absorbed
// and the text after it starts a new segment (with the dummy prefix).
TEST(HfVocabularyTest, AddedTokensStripTheWhitespaceTheySay) {
  const std::string json = R"({
    "added_tokens": [{"id": 0, "content": "<unk>", "special": true},
                     {"id": 4, "content": "<|user|>", "special": true, "rstrip": true},
                     {"id": 5, "content": "<|end|>", "special": true, "lstrip": true}],
    "normalizer": {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "▁"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    "model": {"type": "BPE", "byte_fallback": false, "unk_token": "<unk>",
              "vocab": {"<unk>": 0, "▁": 1, "a": 2, "▁a": 3},
              "merges": ["▁ a"]}})";
  ASSERT_OK_AND_ASSIGN(Vocabulary vocab, VocabularyFromTokenizerJson(json, ""));
  EXPECT_THAT(vocab.rstrip_ids, ElementsAre(4));
  EXPECT_THAT(vocab.lstrip_ids, ElementsAre(5));
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Tokenizer::Create(vocab));
  EXPECT_THAT(tok.Encode("<|user|>\n a \n<|end|>\n", {.parse_special = true}),
              IsOkAndHolds(ElementsAre(4, 3, 5, 1, 0)));
  // Without the attributes every space is text ('\n' has no token: <unk>).
  vocab.rstrip_ids.clear();
  vocab.lstrip_ids.clear();
  ASSERT_OK_AND_ASSIGN(Tokenizer plain, Tokenizer::Create(vocab));
  EXPECT_THAT(plain.Encode("<|user|>\na<|end|>", {.parse_special = true}),
              IsOkAndHolds(ElementsAre(4, 1, 0, 2, 5)));
}

// Gemma (transformers' GemmaTokenizer): Replace ' ' -> '▁', no dummy prefix, byte fallback,
// and a Split on " " that finds no space left to split.
TEST(HfVocabularyTest, GemmaSplitOnSpaceAfterReplaceIsANoOp) {
  const std::string json = R"({
    "added_tokens": [{"id": 0, "content": "<pad>", "special": true},
                     {"id": 1, "content": "<eos>", "special": true},
                     {"id": 2, "content": "<bos>", "special": true},
                     {"id": 3, "content": "<unk>", "special": true},
                     {"id": 4, "content": "<start_of_turn>", "special": true}],
    "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
    "pre_tokenizer": {"type": "Split", "pattern": {"String": " "},
                      "behavior": "MergedWithPrevious", "invert": false},
    "model": {"type": "BPE", "byte_fallback": true, "fuse_unk": true, "unk_token": "<unk>",
              "vocab": {"<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3, "<start_of_turn>": 4,
                        "<0x0A>": 5, "a": 6, "▁": 7, "▁a": 8},
              "merges": ["▁ a"]}})";
  ASSERT_OK_AND_ASSIGN(Vocabulary vocab, VocabularyFromTokenizerJson(json, ""));
  EXPECT_EQ(vocab.encoding, TextEncoding::kMetaspace);
  EXPECT_EQ(vocab.space_prefix, SpacePrefix::kNever);
  EXPECT_EQ(vocab.types[5], TokenType::kByte);
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Tokenizer::Create(vocab));
  EXPECT_THAT(tok.Encode("<start_of_turn>a a\n", {.parse_special = true}),
              IsOkAndHolds(ElementsAre(4, 6, 8, 5)));
  // A Split on a space is still refused where spaces are left to split.
  const std::string byte_level = R"({
    "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "Isolated"},
    "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})";
  EXPECT_THAT(VocabularyFromTokenizerJson(byte_level, ""),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("Split")));
}

TEST(HfVocabularyTest, MetaspacePreTokenizerPrependsOnlyFirst) {
  const std::string json = R"({
    "added_tokens": [{"id": 0, "content": "<s>", "special": true}],
    "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first",
                      "split": false},
    "model": {"type": "BPE", "byte_fallback": false, "unk_token": "<s>",
              "vocab": {"<s>": 0, "\u2581": 1, "a": 2, "\u2581a": 3},
              "merges": ["\u2581 a"]}})";
  ASSERT_OK_AND_ASSIGN(Vocabulary vocab, VocabularyFromTokenizerJson(json, ""));
  EXPECT_EQ(vocab.space_prefix, SpacePrefix::kFirst);
  ASSERT_OK_AND_ASSIGN(Tokenizer tok, Tokenizer::Create(vocab));
  EXPECT_THAT(tok.Encode("a<s>a", {.parse_special = true}), IsOkAndHolds(ElementsAre(3, 0, 2)));
}

struct ErrorCase {
  const char* name;
  std::string json;
  absl::StatusCode code;
  const char* message;
};

TEST(HfVocabularyTest, MalformedOrUnsupportedFilesNameTheCulprit) {
  const std::string model = R"("model": {"type": "BPE", "vocab": {"a": 0}, "merges": []})";
  const std::vector<ErrorCase> cases = {
      {"not json", "{", absl::StatusCode::kDataLoss, "malformed tokenizer.json"},
      {"no model", "{}", absl::StatusCode::kDataLoss, "no 'model'"},
      {"unigram", R"({"model": {"type": "Unigram", "vocab": []}})",
       absl::StatusCode::kUnimplemented, "'Unigram'"},
      {"id gap", R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 2}, "merges": []},
                     "pre_tokenizer": {"type": "ByteLevel"}})",
       absl::StatusCode::kDataLoss, "no token has id 1"},
      {"bad merge", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [7]},
                        "pre_tokenizer": {"type": "ByteLevel"}})",
       absl::StatusCode::kDataLoss, "merge 0"},
      {"lowercase", absl::StrCat(R"({"normalizer": {"type": "Lowercase"}, )", model, "}"),
       absl::StatusCode::kUnimplemented, "'Lowercase'"},
      {"whitespace split",
       absl::StrCat(R"({"pre_tokenizer": {"type": "WhitespaceSplit"}, )", model, "}"),
       absl::StatusCode::kUnimplemented, "'WhitespaceSplit'"},
      {"no normalisation", absl::StrCat("{", model, "}"), absl::StatusCode::kUnimplemented,
       "neither byte-level nor Metaspace"},
  };
  for (const ErrorCase& c : cases) {
    EXPECT_THAT(VocabularyFromTokenizerJson(c.json, ""), StatusIs(c.code, HasSubstr(c.message)))
        << c.name;
  }
  EXPECT_THAT(VocabularyFromTokenizerJson(kByteLevel, R"({"bos_token": "<nope>"})"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("'<nope>'")));
}

}  // namespace
}  // namespace tandem
