#include "core/generation/ngram_drafter.h"

#include <vector>

#include "gtest/gtest.h"

namespace tandem {
namespace {

struct NgramCase {
  const char* name;
  std::vector<int32_t> history;
  int32_t k;
  std::vector<int32_t> expected;
};

class NgramGuessesTest : public ::testing::TestWithParam<NgramCase> {};

TEST_P(NgramGuessesTest, ProposesWhatFollowedTheLatestLongestMatch) {
  const NgramCase& c = GetParam();
  EXPECT_EQ(NgramGuesses(c.history, c.k), c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NgramGuessesTest,
    ::testing::Values(
        NgramCase{"no_earlier_occurrence", {1, 2, 3, 4, 5}, 4, {}},
        NgramCase{"a_single_token_match_is_too_short", {7, 1, 9, 8, 7}, 4, {}},
        NgramCase{"continues_a_quoted_passage", {5, 6, 7, 8, 9, 1, 5, 6}, 3, {7, 8, 9}},
        NgramCase{"k_bounds_the_guesses", {5, 6, 7, 8, 9, 1, 5, 6}, 2, {7, 8}},
        NgramCase{"fewer_where_the_history_ends", {5, 6, 7, 5, 6}, 4, {7, 5, 6}},
        NgramCase{"the_longest_suffix_wins_over_a_later_shorter_one",
                  {1, 2, 3, 40, 9, 2, 3, 50, 1, 2, 3},
                  1,
                  {40}},
        NgramCase{
            "the_latest_occurrence_of_equal_length_wins", {2, 3, 40, 2, 3, 50, 2, 3}, 1, {50}},
        NgramCase{"a_repeating_token_continues_itself", {4, 4, 4, 4}, 3, {4}},
        NgramCase{"k_zero_guesses_nothing", {5, 6, 5, 6}, 0, {}},
        NgramCase{"an_empty_history_guesses_nothing", {}, 4, {}}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tandem
