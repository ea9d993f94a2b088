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

TEST_P(NgramGuessesTest, ProposesWhatFollowedTheLatestLongestMatchForAsLongAsItHeld) {
  const NgramCase& c = GetParam();
  EXPECT_EQ(NgramGuesses(c.history, c.k), c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NgramGuessesTest,
    ::testing::Values(
        NgramCase{"no_earlier_occurrence", {1, 2, 3, 4, 5}, 4, {}},
        NgramCase{"a_single_token_match_is_too_short", {7, 1, 9, 8, 7}, 4, {}},
        // A 2-token match earns 2 guesses.
        NgramCase{"continues_a_quoted_passage", {5, 6, 7, 8, 9, 1, 5, 6}, 3, {7, 8}},
        NgramCase{"k_bounds_the_guesses", {5, 6, 7, 8, 9, 1, 5, 6}, 1, {7}},
        // A 4-token match earns 3, but only 2 tokens follow it.
        NgramCase{"fewer_where_the_history_ends", {5, 6, 7, 8, 5, 6, 7, 8}, 4, {5, 6, 7}},
        NgramCase{"fewer_where_the_history_ends_still", {5, 6, 5, 6}, 4, {5, 6}},
        NgramCase{"the_longest_suffix_wins_over_a_later_shorter_one",
                  {1, 2, 3, 40, 9, 2, 3, 50, 1, 2, 3},
                  1,
                  {40}},
        NgramCase{
            "the_latest_occurrence_of_equal_length_wins", {2, 3, 40, 2, 3, 50, 2, 3}, 1, {50}},
        // A 10-token match earns 6 guesses, a 2-token one 2, whatever k allows.
        NgramCase{"the_draft_length_follows_a_long_match",
                  {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 99, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
                  16,
                  {99, 1, 2, 3, 4, 5}},
        NgramCase{"a_short_match_earns_few_guesses", {1, 2, 9, 8, 7, 6, 5, 1, 2}, 16, {9, 8}},
        // 32 tokens repeated: the match is measured up to max_match (64), guesses up to k.
        NgramCase{
            "a_match_longer_than_k_guesses_k",
            {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
             22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
             12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31},
            16,
            {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
        NgramCase{"a_repeating_token_continues_itself", {4, 4, 4, 4}, 3, {4}},
        NgramCase{"k_zero_guesses_nothing", {5, 6, 5, 6}, 0, {}},
        NgramCase{"an_empty_history_guesses_nothing", {}, 4, {}}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tandem
