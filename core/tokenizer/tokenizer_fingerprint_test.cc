#include "core/tokenizer/tokenizer_fingerprint.h"

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <utility>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/tokenizer/tokenizer_loader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::SharedFile;

absl::StatusOr<Vocabulary> Load(const std::string& relative) {
  ASSIGN_OR_RETURN(std::string path, SharedFile(relative));
  return LoadVocabulary(path);
}

TEST(TokenizerFingerprintTest, IsSixteenHexDigitsAndEqualForACopy) {
  ASSERT_OK_AND_ASSIGN(Vocabulary vocab, Load("models/vocab/ggml-vocab-gpt-2.gguf"));
  const Vocabulary copy = vocab;
  const std::string fingerprint = TokenizerFingerprint(vocab, std::nullopt);
  EXPECT_THAT(fingerprint, ::testing::MatchesRegex("[0-9a-f]{16}"));
  EXPECT_EQ(TokenizerFingerprint(copy, std::nullopt), fingerprint);
}

// Each change alters how text becomes ids, so the fingerprint must change with it, though
// most leave the vocabulary fingerprint (ids to texts) as it was.
struct Change {
  std::string name;
  std::function<void(Vocabulary&)> apply;
  bool changes_vocabulary_fingerprint = false;
};

void PrintTo(const Change& c, std::ostream* os) { *os << c.name; }

class TokenizerFingerprintChangeTest : public ::testing::TestWithParam<Change> {};

TEST_P(TokenizerFingerprintChangeTest, EveryFieldThatDecidesTheIdsChangesIt) {
  ASSERT_OK_AND_ASSIGN(Vocabulary vocab, Load("models/vocab/ggml-vocab-gpt-2.gguf"));
  ASSERT_GE(vocab.merges.size(), 2u);
  Vocabulary changed = vocab;
  GetParam().apply(changed);
  EXPECT_NE(TokenizerFingerprint(changed, std::nullopt), TokenizerFingerprint(vocab, std::nullopt));
  EXPECT_EQ(VocabularyFingerprint(changed) != VocabularyFingerprint(vocab),
            GetParam().changes_vocabulary_fingerprint);
}

INSTANTIATE_TEST_SUITE_P(
    Fields, TokenizerFingerprintChangeTest,
    ::testing::Values(
        Change{"MergeOrder", [](Vocabulary& v) { std::swap(v.merges[0], v.merges[1]); }},
        Change{"MergeSides",
               [](Vocabulary& v) {
                 v.merges[0] = {v.merges[0].first + v.merges[0].second.substr(0, 1),
                                v.merges[0].second.substr(1)};
               }},
        Change{"DroppedMerge", [](Vocabulary& v) { v.merges.pop_back(); }},
        Change{"PreTokenizer", [](Vocabulary& v) { v.pre_tokenizer = "llama-bpe"; }},
        Change{"PreTokenizerRegex", [](Vocabulary& v) { v.pre_tokenizer_regexes = {"\\s+"}; }},
        Change{"AddBos", [](Vocabulary& v) { v.add_bos = !v.add_bos; }},
        Change{"AddEos", [](Vocabulary& v) { v.add_eos = !v.add_eos; }},
        Change{"BytePrefixSpace",
               [](Vocabulary& v) { v.byte_prefix_space = !v.byte_prefix_space; }},
        Change{"IgnoreMerges", [](Vocabulary& v) { v.ignore_merges = !v.ignore_merges; }},
        Change{"ByteFallback", [](Vocabulary& v) { v.byte_fallback = !v.byte_fallback; }},
        Change{"FuseUnk", [](Vocabulary& v) { v.fuse_unk = !v.fuse_unk; }},
        Change{"MetaspaceSplit", [](Vocabulary& v) { v.metaspace_split = !v.metaspace_split; }},
        Change{"SpacePrefix", [](Vocabulary& v) { v.space_prefix = SpacePrefix::kAlways; }},
        Change{"RstripIds", [](Vocabulary& v) { v.rstrip_ids.push_back(0); }},
        Change{"LstripIds", [](Vocabulary& v) { v.lstrip_ids.push_back(0); }},
        Change{"EndOfTurnIds", [](Vocabulary& v) { v.end_of_turn_ids.push_back(1); }},
        Change{"TokenType", [](Vocabulary& v) { v.types[5] = TokenType::kUserDefined; }},
        Change{"Scores", [](Vocabulary& v) { v.scores.assign(v.tokens.size(), 0.5f); }},
        Change{"MergeModel", [](Vocabulary& v) { v.model = MergeModel::kScores; }},
        Change{"TokenText", [](Vocabulary& v) { v.tokens[5] += "x"; }, true},
        Change{"BosId", [](Vocabulary& v) { v.bos_id = 7; }, true}),
    [](const ::testing::TestParamInfo<Change>& info) { return info.param.name; });

TEST(TokenizerFingerprintTest, TheChatTemplateIsPartOfIt) {
  ASSERT_OK_AND_ASSIGN(Vocabulary vocab, Load("models/vocab/ggml-vocab-gpt-2.gguf"));
  const std::string none = TokenizerFingerprint(vocab, std::nullopt);
  const std::string empty = TokenizerFingerprint(vocab, std::string());
  const std::string chatml = TokenizerFingerprint(vocab, std::string("{{ messages }}"));
  EXPECT_NE(none, empty);  // no template (a family format) is not an empty template
  EXPECT_NE(empty, chatml);
  EXPECT_EQ(chatml, TokenizerFingerprint(vocab, std::string("{{ messages }}")));
}

}  // namespace
}  // namespace tandem
