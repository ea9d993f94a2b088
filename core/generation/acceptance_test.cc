#include "core/generation/acceptance.h"

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/generation/chi_square.h"
#include "core/generation/random.h"
#include "core/generation/sampler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::ChiSquareResult;
using ::tandem::testing::ChiSquareTest;
using ::tandem::testing::IsOk;
using ::tandem::testing::Outcome;
using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

SparseDistribution OneHot(int32_t id) { return SparseDistribution{{id}, {1.0f}}; }

// Runs AcceptGuesses on well-formed input, where it must succeed.
AcceptanceResult AcceptOk(const AcceptanceInput& input) {
  absl::StatusOr<AcceptanceResult> result = AcceptGuesses(input);
  EXPECT_THAT(result, IsOk());
  return result.ok() ? *std::move(result) : AcceptanceResult();
}

// Runs AcceptGuesses over sparse distributions.
AcceptanceResult Accept(const std::vector<int32_t>& guesses,
                        const std::vector<SparseDistribution>& q,
                        const std::vector<SparseDistribution>& p, uint64_t seed,
                        int64_t first_position) {
  std::vector<DistributionView> q_views, p_views;
  for (const SparseDistribution& d : q) q_views.push_back(DistributionView::Sparse(d));
  for (const SparseDistribution& d : p) p_views.push_back(DistributionView::Sparse(d));
  AcceptanceInput input;
  input.guesses = guesses;
  input.draft = q_views;
  input.target = p_views;
  input.seed = seed;
  input.first_position = first_position;
  return AcceptOk(input);
}

struct GreedyCase {
  std::string name;
  std::vector<int32_t> guesses;
  std::vector<int32_t> target_argmax;  // k + 1 entries
  int32_t accepted;
  int32_t next_token;
  std::vector<float> guess_probabilities;
};

TEST(AcceptGuessesTest, GreedyKeepsTheGuessesEqualToTheTargetsArgMax) {
  const std::vector<GreedyCase> cases = {
      {"all kept, bonus", {5, 6, 7}, {5, 6, 7, 3}, 3, 3, {1, 1, 1}},
      {"first rejected", {5, 6, 7}, {4, 6, 7, 3}, 0, 4, {0}},
      {"third rejected", {5, 6, 7}, {5, 6, 9, 3}, 2, 9, {1, 1, 0}},
      {"no guesses: the bonus alone", {}, {8}, 0, 8, {}},
  };
  for (const GreedyCase& c : cases) {
    std::vector<SparseDistribution> q, p;
    for (int32_t g : c.guesses) q.push_back(OneHot(g));
    for (int32_t t : c.target_argmax) p.push_back(OneHot(t));
    for (uint64_t seed : {0ull, 1ull, 99ull}) {
      const AcceptanceResult r = Accept(c.guesses, q, p, seed, 10);
      EXPECT_EQ(r.accepted, c.accepted) << c.name;
      EXPECT_EQ(r.next_token, c.next_token) << c.name;
      EXPECT_THAT(r.guess_probabilities, ElementsAreArray(c.guess_probabilities)) << c.name;
    }
  }
}

TEST(AcceptGuessesTest, GuessOutsideTheTargetVocabularyIsAlwaysRejected) {
  const std::vector<float> p = {0.25f, 0.25f, 0.25f, 0.25f};  // a 4-token target
  const SparseDistribution q{{1, 6}, {0.5f, 0.5f}};
  const std::vector<DistributionView> q_views = {DistributionView::Sparse(q)};
  const std::vector<DistributionView> p_views = {DistributionView::Dense(p),
                                                 DistributionView::Dense(p)};
  const std::vector<int32_t> guesses = {6};
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const AcceptanceResult r = AcceptOk({guesses, q_views, p_views, seed, 3});
    EXPECT_EQ(r.accepted, 0);
    // max(0, p - q) = {0: 0.25, 2: 0.25, 3: 0.25}: never the guess, never id 1.
    EXPECT_THAT(r.next_token, ::testing::AnyOf(0, 2, 3));
    EXPECT_THAT(r.guess_probabilities, ElementsAre(0.0f));
  }
}

TEST(AcceptGuessesTest, ResidualIsAlignedByTokenId) {
  // p = {2: 0.5, 7: 0.5}, q = {2: 1}: guess 2 is kept half the time; a rejection can only be
  // replaced by 7, where p exceeds q.
  const SparseDistribution p{{2, 7}, {0.5f, 0.5f}};
  int kept = 0;
  for (uint64_t seed = 0; seed < 1000; ++seed) {
    const AcceptanceResult r = Accept({2}, {OneHot(2)}, {p, p}, seed, 0);
    if (r.accepted == 1) {
      ++kept;
    } else {
      EXPECT_EQ(r.next_token, 7);
    }
    EXPECT_THAT(r.guess_probabilities, ElementsAre(0.5f));
  }
  EXPECT_GT(kept, 400);
  EXPECT_LT(kept, 600);
}

TEST(AcceptGuessesTest, DenseAndSparseViewsOfOneDistributionAgree) {
  const std::vector<float> dense = {0, 0.1f, 0, 0.6f, 0.3f, 0};
  const SparseDistribution sparse{{1, 3, 4}, {0.1f, 0.6f, 0.3f}};
  const SparseDistribution q{{0, 3, 5}, {0.2f, 0.5f, 0.3f}};
  for (uint64_t seed = 0; seed < 300; ++seed) {
    for (int32_t guess : {0, 3, 5}) {
      const std::vector<int32_t> guesses = {guess};
      const std::vector<DistributionView> q_views = {DistributionView::Sparse(q)};
      const std::vector<DistributionView> d = {DistributionView::Dense(dense),
                                               DistributionView::Dense(dense)};
      const std::vector<DistributionView> s = {DistributionView::Sparse(sparse),
                                               DistributionView::Sparse(sparse)};
      const AcceptanceResult a = AcceptOk({guesses, q_views, d, seed, 5});
      const AcceptanceResult b = AcceptOk({guesses, q_views, s, seed, 5});
      EXPECT_EQ(a.accepted, b.accepted);
      EXPECT_EQ(a.next_token, b.next_token);
    }
  }
}

TEST(AcceptGuessesTest, SameSeedAndPositionGiveTheSameVerdict) {
  const SparseDistribution p{{0, 1, 2}, {0.2f, 0.3f, 0.5f}};
  const SparseDistribution q{{0, 1, 2}, {0.6f, 0.3f, 0.1f}};
  int differing = 0;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    const AcceptanceResult a = Accept({0, 0}, {q, q}, {p, p, p}, seed, 40);
    const AcceptanceResult b = Accept({0, 0}, {q, q}, {p, p, p}, seed, 40);
    EXPECT_EQ(a.accepted, b.accepted);
    EXPECT_EQ(a.next_token, b.next_token);
    const AcceptanceResult c = Accept({0, 0}, {q, q}, {p, p, p}, seed, 41);
    differing += (a.accepted != c.accepted || a.next_token != c.next_token);
  }
  EXPECT_GT(differing, 10);  // the position is part of the key
}

// Losslessness of the rule itself: guesses drawn from fixed q's (as the draft does, keyed by
// seed and position), the round's first token is distributed as p1 and its second, when
// there is one, as p2. Chi-square at significance 0.001 over fixed seeds.
struct LosslessCase {
  std::string name;
  std::vector<SparseDistribution> q;  // k
  std::vector<SparseDistribution> p;  // k + 1
};

TEST(AcceptGuessesTest, RoundTokensAreDistributedAsTheTarget) {
  const SparseDistribution p_a{{0, 1, 2, 3, 4}, {0.1f, 0.4f, 0.2f, 0.05f, 0.25f}};
  const SparseDistribution q_a{{0, 1, 2, 3, 4, 5}, {0.3f, 0.1f, 0.1f, 0.3f, 0.1f, 0.1f}};
  const SparseDistribution p_b{{1, 3, 6}, {0.5f, 0.3f, 0.2f}};
  const SparseDistribution q_b{{1, 3}, {0.2f, 0.8f}};           // misses 6
  const SparseDistribution q_c{{2, 5, 7}, {0.4f, 0.4f, 0.2f}};  // disjoint from p_b
  const std::vector<LosslessCase> cases = {
      {"k 0: the bonus", {}, {p_a}},
      {"k 1, q spread wider than p", {q_a}, {p_a, p_b}},
      {"k 2, q missing a token of p", {q_b, q_a}, {p_b, p_a, p_b}},
      {"k 3, a disjoint second q", {q_b, q_c, q_a}, {p_b, p_b, p_a, p_a}},
  };
  constexpr int64_t kSeeds = 20000;
  for (const LosslessCase& c : cases) {
    SCOPED_TRACE(c.name);
    const int64_t k = static_cast<int64_t>(c.q.size());
    constexpr int64_t kFirst = 17;
    std::map<Outcome, int64_t> first, second;
    int64_t with_second = 0;
    for (int64_t seed = 0; seed < kSeeds; ++seed) {
      std::vector<int32_t> guesses;
      for (int64_t i = 0; i < k; ++i) {
        const double u = CounterUniform(seed, kFirst + i, RandomPurpose::kDraftDraw);
        guesses.push_back(c.q[i].ids[Sampler::Draw(c.q[i].probabilities, u)]);
      }
      const AcceptanceResult r = Accept(guesses, c.q, c.p, seed, kFirst);
      ASSERT_GE(r.accepted, 0);
      ASSERT_LE(r.accepted, k);
      std::vector<int32_t> tokens(guesses.begin(), guesses.begin() + r.accepted);
      tokens.push_back(r.next_token);
      ++first[{tokens[0]}];
      if (tokens.size() >= 2) {
        ++second[{tokens[1]}];
        ++with_second;
      }
    }
    const auto expected = [](const SparseDistribution& d) {
      std::map<Outcome, double> e;
      for (size_t i = 0; i < d.ids.size(); ++i) e[{d.ids[i]}] = d.probabilities[i];
      return e;
    };
    const ChiSquareResult r1 = ChiSquareTest(first, expected(c.p[0]), kSeeds);
    EXPECT_FALSE(r1.rejected()) << "first token: " << r1.ToString();
    if (k >= 1) {
      ASSERT_GT(with_second, 1000);
      const ChiSquareResult r2 = ChiSquareTest(second, expected(c.p[1]), with_second);
      EXPECT_FALSE(r2.rejected()) << "second token: " << r2.ToString();
    }
  }
}

TEST(AcceptGuessesTest, ChiSquareDetectsTheDraftsOwnDistribution) {
  // The test has power: the guesses themselves (q, not p) fail it.
  const SparseDistribution p{{0, 1, 2, 3, 4}, {0.1f, 0.4f, 0.2f, 0.05f, 0.25f}};
  const SparseDistribution q{{0, 1, 2, 3, 4}, {0.15f, 0.35f, 0.2f, 0.05f, 0.25f}};
  std::map<Outcome, int64_t> observed;
  constexpr int64_t kSeeds = 20000;
  for (int64_t seed = 0; seed < kSeeds; ++seed) {
    const double u = CounterUniform(seed, 0, RandomPurpose::kDraftDraw);
    ++observed[{q.ids[Sampler::Draw(q.probabilities, u)]}];
  }
  std::map<Outcome, double> expected;
  for (size_t i = 0; i < p.ids.size(); ++i) expected[{p.ids[i]}] = p.probabilities[i];
  EXPECT_TRUE(ChiSquareTest(observed, expected, kSeeds).rejected());
}

TEST(ChiSquareTest, PValuesMatchTablesOfTheDistribution) {
  // Upper 0.001 quantiles from standard tables: P(X > x) = 0.001.
  const std::vector<std::pair<int, double>> quantiles = {
      {1, 10.828}, {2, 13.816}, {4, 18.467}, {10, 29.588}, {30, 59.703}, {100, 149.449}};
  for (const auto& [dof, x] : quantiles) {
    EXPECT_NEAR(testing::ChiSquarePValue(x, dof), 0.001, 2e-6) << dof;
  }
  EXPECT_NEAR(testing::ChiSquarePValue(2.0, 2), std::exp(-1.0), 1e-12);  // Q(1, 1) = e^-1
}

TEST(DistributionViewTest, ProbabilityLooksUpIdsInBothForms) {
  const std::vector<float> dense = {0.5f, 0, 0.5f};
  const SparseDistribution sparse{{3, 9}, {0.25f, 0.75f}};
  const DistributionView d = DistributionView::Dense(dense);
  const DistributionView s = DistributionView::Sparse(sparse);
  EXPECT_EQ(d.Probability(0), 0.5f);
  EXPECT_EQ(d.Probability(1), 0.0f);
  EXPECT_EQ(d.Probability(3), 0.0f);
  EXPECT_EQ(d.Probability(-1), 0.0f);
  EXPECT_EQ(s.Probability(3), 0.25f);
  EXPECT_EQ(s.Probability(9), 0.75f);
  EXPECT_EQ(s.Probability(4), 0.0f);
  EXPECT_EQ(s.Probability(10), 0.0f);
}

struct ValidateCase {
  std::string name;
  SparseDistribution distribution;
  std::string message;  // empty: valid
};

TEST(ValidateSparseDistributionTest, RejectsMalformedDistributionsSayingWhy) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<ValidateCase> cases = {
      {"valid", {{0, 5, 9}, {0.2f, 0.3f, 0.5f}}, ""},
      {"empty", {{}, {}}, "no tokens"},
      {"length mismatch", {{1, 2}, {1.0f}}, "2 ids but 1 probabilities"},
      {"not increasing", {{3, 3}, {0.5f, 0.5f}}, "strictly increasing"},
      {"decreasing", {{4, 3}, {0.5f, 0.5f}}, "strictly increasing"},
      {"negative id", {{-1}, {1.0f}}, "outside [0, 10)"},
      {"id beyond the vocabulary", {{10}, {1.0f}}, "outside [0, 10)"},
      {"negative probability", {{1, 2}, {1.5f, -0.5f}}, "probability of token 2"},
      {"nan probability", {{1}, {nan}}, "probability of token 1"},
      {"no mass", {{1, 2}, {0.0f, 0.0f}}, "no mass"},
  };
  for (const ValidateCase& c : cases) {
    if (c.message.empty()) {
      EXPECT_THAT(ValidateSparseDistribution(c.distribution, 10), IsOk()) << c.name;
    } else {
      EXPECT_THAT(ValidateSparseDistribution(c.distribution, 10),
                  StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
          << c.name;
    }
  }
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

struct DraftCase {
  std::string name;
  std::vector<int32_t> guesses;
  std::vector<SparseDistribution> q;
  std::string message;  // empty: valid
};

TEST(ValidateDraftDistributionsTest, RejectsEachUntrustworthyQNamingTheGuess) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const SparseDistribution good{{1, 4}, {0.25f, 0.75f}};
  const std::vector<DraftCase> cases = {
      {"valid", {4, 1}, {good, good}, ""},
      {"mass just within the tolerance", {1}, {{{1, 4}, {0.25f, 0.7509f}}}, ""},
      {"fewer q than guesses", {1, 4}, {good}, "2 guesses but 1 draft distributions"},
      {"guess outside the support",
       {4, 2},
       {good, good},
       "guess 1: draft distribution gives "
       "the guess 2 no probability"},
      {"guess with probability 0",
       {4},
       {{{1, 4}, {1.0f, 0.0f}}},
       "guess 0: draft distribution "
       "gives the guess 4 no"},
      {"mass 1e30",
       {1},
       {{{1, 4}, {1e30f, 0.0f}}},
       "guess 0: draft distribution has total mass 1e+30"},
      {"mass one half",
       {4, 1},
       {good, {{1, 4}, {0.25f, 0.25f}}},
       "guess 1: draft distribution "
       "has total mass 0.5"},
      {"mass just beyond the tolerance",
       {1},
       {{{1, 4}, {0.25f, 0.7511f}}},
       "guess 0: draft "
       "distribution has "
       "total mass 1.0011"},
      {"infinite probability", {1}, {{{1, 4}, {inf, 0.5f}}}, "guess 0: distribution probability"},
      {"nan probability", {1}, {{{1, 4}, {0.5f, nan}}}, "guess 0: distribution probability"},
      {"negative probability", {1}, {{{1, 4}, {1.5f, -0.5f}}}, "guess 0: distribution probability"},
      {"id beyond the bound", {1}, {{{1, 10}, {0.5f, 0.5f}}}, "guess 0: distribution token id 10"},
  };
  for (const DraftCase& c : cases) {
    absl::StatusOr<std::vector<SparseDistribution>> result =
        ValidateDraftDistributions(c.guesses, c.q, 10);
    if (c.message.empty()) {
      EXPECT_THAT(result, IsOk()) << c.name;
    } else {
      EXPECT_THAT(result, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
          << c.name;
    }
  }
}

TEST(ValidateDraftDistributionsTest, RenormalisesEachQToTheMassItWasValidatedWith) {
  const std::vector<SparseDistribution> q = {{{0, 3, 5}, {0.2f, 0.3f, 0.5008f}}, {{7}, {0.9995f}}};
  ASSERT_OK_AND_ASSIGN(std::vector<SparseDistribution> out,
                       ValidateDraftDistributions({3, 7}, q, 10));
  ASSERT_EQ(out.size(), 2u);
  // The sum as the validation takes it: the floats, in order, in double.
  const double total = static_cast<double>(0.2f) + static_cast<double>(0.3f) + 0.5008f;
  EXPECT_THAT(out[0].ids, ElementsAre(0, 3, 5));
  EXPECT_THAT(out[0].probabilities,
              ElementsAre(static_cast<float>(0.2f / total), static_cast<float>(0.3f / total),
                          static_cast<float>(0.5008f / total)));
  EXPECT_THAT(out[1].ids, ElementsAre(7));
  EXPECT_THAT(out[1].probabilities, ElementsAre(1.0f));
}

TEST(AcceptGuessesTest, MalformedInputIsAnErrorNotAnAbort) {
  const std::vector<float> empty_p = {0, 0, 0, 0};  // no mass to draw the bonus from
  const std::vector<float> good_p = {0.5f, 0.5f, 0, 0};
  const SparseDistribution q{{1}, {1.0f}};
  const std::vector<int32_t> no_guesses = {};
  const std::vector<int32_t> one_guess = {1};
  const std::vector<DistributionView> q_views = {DistributionView::Sparse(q)};
  const std::vector<DistributionView> empty = {DistributionView::Dense(empty_p)};
  const std::vector<DistributionView> good = {DistributionView::Dense(good_p),
                                              DistributionView::Dense(good_p)};
  EXPECT_THAT(AcceptGuesses({no_guesses, {}, empty, 0, 0}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("target distribution 0 has no positive mass")));
  EXPECT_THAT(AcceptGuesses({one_guess, {}, good, 0, 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1 guesses need")));
  EXPECT_THAT(AcceptGuesses({one_guess, q_views, empty, 0, 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1 guesses need")));
  // A rejected guess whose p row has no mass at all: neither the residual nor p can be drawn.
  const std::vector<DistributionView> first_empty = {DistributionView::Dense(empty_p),
                                                     DistributionView::Dense(good_p)};
  EXPECT_THAT(AcceptGuesses({one_guess, q_views, first_empty, 0, 0}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("target distribution 0 has no positive mass")));
}

}  // namespace
}  // namespace tandem
