#include "core/generation/prediction_drafter.h"

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tandem {
namespace {

// Prompt tokens before the output in every sequence: the drafter must skip them.
const std::vector<int32_t> kPrompt = {900, 901, 902};

std::vector<int32_t> Sequence(const std::vector<int32_t>& output) {
  std::vector<int32_t> sequence = kPrompt;
  sequence.insert(sequence.end(), output.begin(), output.end());
  return sequence;
}

struct AlignCase {
  const char* name;
  std::vector<int32_t> prediction;
  std::vector<int32_t> output;  // so far
  int32_t k;
  std::vector<int32_t> expected;  // the guesses after it
};

class PredictionGuessesTest : public ::testing::TestWithParam<AlignCase> {};

TEST_P(PredictionGuessesTest, ContinueThePredictionFromWhereTheOutputIsAlignedWithIt) {
  const AlignCase& c = GetParam();
  PredictionDrafter drafter(c.prediction, static_cast<int64_t>(kPrompt.size()));
  std::vector<int32_t> guesses;
  drafter.Guesses(Sequence(c.output), c.k, &guesses);
  EXPECT_EQ(guesses, c.expected);
}

const std::vector<int32_t> kText = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
                                    20, 21, 22, 23, 24, 25, 26, 27, 28, 29};

INSTANTIATE_TEST_SUITE_P(
    Cases, PredictionGuessesTest,
    ::testing::Values(
        AlignCase{"from_the_start", kText, {}, 4, {10, 11, 12, 13}},
        AlignCase{"after_an_aligned_output", kText, {10, 11, 12}, 3, {13, 14, 15}},
        AlignCase{"k_bounds_them", kText, {10}, 1, {11}},
        AlignCase{"fewer_where_the_prediction_ends", kText, {10, 11, 12, 13, 14, 15, 16, 17, 18},
                  8, {19, 20, 21, 22, 23, 24, 25, 26}},
        AlignCase{"none_past_the_end", {10, 11}, {10, 11, 12}, 4, {}},
        // 13 replaced by 99: the output goes on after the replaced token.
        AlignCase{"a_substituted_token", kText, {10, 11, 12, 99}, 3, {14, 15, 16}},
        // The output lacks 13: found one ahead.
        AlignCase{"a_token_the_output_skips", kText, {10, 11, 12, 14}, 3, {15, 16, 17}},
        AlignCase{"three_tokens_the_output_skips", kText, {10, 11, 12, 16}, 2, {17, 18}},
        // The output inserts 98 97 before 13: substitutions at first, then 13 is found behind;
        // three misses in a row: no guesses until a token matches again.
        AlignCase{"none_inside_a_run_of_edits", kText, {10, 11, 12, 98, 97, 13}, 2, {}},
        AlignCase{"tokens_the_output_inserts", kText, {10, 11, 12, 98, 97, 13, 14}, 2, {15, 16}},
        // Right after an edit, at most after_edit (4) guesses until two tokens in a row match.
        AlignCase{"few_right_after_an_edit", kText, {10, 11, 12, 99, 14}, 8, {15, 16, 17, 18}},
        AlignCase{"all_once_confirmed", kText, {10, 11, 12, 99, 14, 15}, 6,
                  {16, 17, 18, 19, 20, 21}},
        // Twelve tokens edited away, then three in a row of the prediction re-align.
        AlignCase{"a_long_edit_realigns_by_suffix_match", kText,
                  {10, 11, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 25, 26, 27}, 2,
                  {28, 29}},
        AlignCase{"an_unrelated_output_gets_none_after_the_window", kText,
                  {50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69,
                   70},
                  4, {}},
        // The same 3-token run twice in the prediction: the occurrence after the expected index.
        AlignCase{"the_nearest_match_after_the_expected_index_wins",
                  {1, 2, 3, 4, 40, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 1, 2, 3, 4, 41},
                  {1, 2, 3, 4, 40, 5, 6, 7, 8, 9, 10, 11, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39,
                   1, 2, 3, 4},
                  1, {41}},
        AlignCase{"k_zero_guesses_nothing", kText, {10}, 0, {}},
        AlignCase{"an_empty_prediction_guesses_nothing", {}, {}, 4, {}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(PredictionDrafterTest, FollowsTheOutputRoundByRound) {
  PredictionDrafter drafter(kText, static_cast<int64_t>(kPrompt.size()));
  std::vector<int32_t> output;
  std::vector<int32_t> guesses;
  drafter.Guesses(Sequence(output), 2, &guesses);
  EXPECT_EQ(guesses, (std::vector<int32_t>{10, 11}));
  output = {10, 11, 12, 99};  // two kept, 12 kept as the next token, 13 edited into 99
  drafter.Guesses(Sequence(output), 2, &guesses);
  EXPECT_EQ(guesses, (std::vector<int32_t>{14, 15}));
  EXPECT_EQ(drafter.expected(), 14 - 10);
}

TEST(PredictionDrafterTest, ASequenceCutShortRestoresTheAlignmentAtItsEnd) {
  PredictionDrafter drafter(kText, static_cast<int64_t>(kPrompt.size()));
  std::vector<int32_t> guesses;
  drafter.Guesses(Sequence({10, 11, 12, 13, 14}), 1, &guesses);
  EXPECT_EQ(guesses, (std::vector<int32_t>{15}));
  // The caller dropped 13 14 and went another way: as if the longer one was never seen.
  drafter.Guesses(Sequence({10, 11, 12, 99}), 2, &guesses);
  EXPECT_EQ(guesses, (std::vector<int32_t>{14, 15}));
  drafter.Guesses(Sequence({10, 11}), 1, &guesses);
  EXPECT_EQ(guesses, (std::vector<int32_t>{12}));
}

// A 5 % edited prediction of a long output: the guesses that would be kept are most of it.
TEST(PredictionDrafterTest, SpreadSubstitutionsCostOneGuessEach) {
  std::vector<int32_t> output;
  for (int32_t i = 0; i < 400; ++i) output.push_back(1000 + (i * 7919) % 500);
  std::vector<int32_t> prediction = output;
  for (size_t i = 10; i < prediction.size(); i += 20) prediction[i] = 5;  // 20 edits
  PredictionDrafter drafter(prediction, 0);
  int misses = 0;
  std::vector<int32_t> guesses;
  for (size_t i = 0; i < output.size(); ++i) {
    drafter.Guesses(absl::MakeConstSpan(output.data(), i), 1, &guesses);
    if (guesses.empty() || guesses[0] != output[i]) ++misses;
  }
  EXPECT_EQ(misses, 20);
}

// Random edits of every kind (a token replaced, a random one inserted, one deleted), 5 % of a
// 400-token output: each costs about one wrong first guess (a deletion two: the substitution
// tried first is wrong once), not the rest of the prediction.
TEST(PredictionDrafterTest, EditsOfEveryKindCostAboutOneWrongGuessEach) {
  std::mt19937 rng(7);
  std::vector<int32_t> output;
  for (int32_t i = 0; i < 400; ++i) output.push_back(1000 + static_cast<int32_t>(rng() % 30000));
  std::vector<int32_t> prediction;
  int edits = 0;
  for (size_t i = 0; i < output.size(); ++i) {
    if (i % 20 != 10) {
      prediction.push_back(output[i]);
      continue;
    }
    ++edits;
    switch (edits % 3) {
      case 0:
        prediction.push_back(5);  // replaced
        break;
      case 1:
        prediction.push_back(6);  // inserted before it
        prediction.push_back(output[i]);
        break;
      default:
        break;  // deleted
    }
  }
  PredictionDrafter drafter(prediction, 0);
  int misses = 0;
  std::vector<int32_t> guesses;
  for (size_t i = 0; i < output.size(); ++i) {
    drafter.Guesses(absl::MakeConstSpan(output.data(), i), 1, &guesses);
    if (guesses.empty() || guesses[0] != output[i]) ++misses;
  }
  EXPECT_LE(misses, edits + edits / 3 + 1);
}

// An unrelated prediction is given up after a few wrong tokens: it then guesses nothing.
TEST(PredictionDrafterTest, AnUnrelatedPredictionIsGivenUp) {
  std::vector<int32_t> prediction, output;
  for (int32_t i = 0; i < 100; ++i) {
    prediction.push_back(1000 + i);
    output.push_back(5000 + i);
  }
  PredictionDrafter drafter(prediction, 0);
  int guessed = 0;
  std::vector<int32_t> guesses;
  for (size_t i = 0; i < output.size(); ++i) {
    drafter.Guesses(absl::MakeConstSpan(output.data(), i), 1, &guesses);
    guessed += !guesses.empty();
  }
  EXPECT_LE(guessed, PredictionOptions().window + 2);
}

}  // namespace
}  // namespace tandem
