#include "core/generation/gumbel_coupling.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/generation/chi_square.h"
#include "core/generation/random.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::ChiSquareResult;
using ::tandem::testing::ChiSquareTest;
using ::tandem::testing::Outcome;
using ::tandem::testing::StatusIs;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

constexpr int64_t kSeeds = 20000;

std::map<Outcome, double> Expected(const SparseDistribution& d) {
  std::map<Outcome, double> e;
  for (size_t i = 0; i < d.ids.size(); ++i) e[{d.ids[i]}] = d.probabilities[i];
  return e;
}

// The target's picks at positions first..first+n of `p` (one distribution per position).
std::vector<int32_t> TargetPicks(const std::vector<SparseDistribution>& p, uint64_t seed,
                                 int64_t first) {
  std::vector<int32_t> picks;
  for (size_t i = 0; i < p.size(); ++i) {
    picks.push_back(GumbelPick(DistributionView::Sparse(p[i]), seed, first + i));
  }
  return picks;
}

absl::StatusOr<AcceptanceResult> Verdict(const std::vector<int32_t>& guesses,
                                         const std::vector<SparseDistribution>& p, uint64_t seed,
                                         int64_t first) {
  std::vector<DistributionView> views;
  for (const SparseDistribution& d : p) views.push_back(DistributionView::Sparse(d));
  return AcceptGuessesGumbel(guesses, views, seed, first);
}

const SparseDistribution kP{{0, 1, 2, 3, 4}, {0.1f, 0.4f, 0.2f, 0.05f, 0.25f}};

TEST(GumbelUniformTest, StaysStrictlyInsideZeroAndOne) {
  for (int64_t position = 0; position < 200; ++position) {
    for (int32_t id = 0; id < 200; ++id) {
      const double u = GumbelUniform(3, position, id);
      ASSERT_GT(u, 0.0);
      ASSERT_LT(u, 1.0);
    }
  }
  // Keyed by every field: changing one gives another number.
  EXPECT_NE(GumbelUniform(1, 2, 3), GumbelUniform(2, 2, 3));
  EXPECT_NE(GumbelUniform(1, 2, 3), GumbelUniform(1, 3, 3));
  EXPECT_NE(GumbelUniform(1, 2, 3), GumbelUniform(1, 2, 4));
}

TEST(GumbelPickTest, PicksAreDistributedAsTheDistribution) {
  std::map<Outcome, int64_t> observed;
  for (int64_t seed = 0; seed < kSeeds; ++seed) {
    ++observed[{GumbelPick(DistributionView::Sparse(kP), seed, 9)}];
  }
  const ChiSquareResult r = ChiSquareTest(observed, Expected(kP), kSeeds);
  EXPECT_FALSE(r.rejected()) << r.ToString();
  // The test has power: a neighbouring distribution fails it.
  const SparseDistribution other{{0, 1, 2, 3, 4}, {0.15f, 0.35f, 0.2f, 0.05f, 0.25f}};
  EXPECT_TRUE(ChiSquareTest(observed, Expected(other), kSeeds).rejected());
}

TEST(GumbelPickTest, DenseAndSparseViewsPickTheSameToken) {
  const std::vector<float> dense = {0.1f, 0.4f, 0.2f, 0.05f, 0.25f, 0.0f, 0.0f};
  for (uint64_t seed = 0; seed < 500; ++seed) {
    ASSERT_EQ(GumbelPick(DistributionView::Dense(dense), seed, 4),
              GumbelPick(DistributionView::Sparse(kP), seed, 4))
        << seed;
  }
}

TEST(GumbelPickTest, OneHotPicksItsTokenAndNoMassPicksNothing) {
  const SparseDistribution one_hot{{42}, {1.0f}};
  const SparseDistribution empty{{1, 2}, {0.0f, 0.0f}};
  for (uint64_t seed = 0; seed < 50; ++seed) {
    EXPECT_EQ(GumbelPick(DistributionView::Sparse(one_hot), seed, 0), 42);
    EXPECT_EQ(GumbelPick(DistributionView::Sparse(empty), seed, 0), -1);
  }
}

TEST(PickTargetTokenTest, StandardDrawsAndGumbelPicks) {
  int differ = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const DistributionView p = DistributionView::Sparse(kP);
    EXPECT_EQ(PickTargetToken(p, Coupling::kStandard, seed, 5), DrawTargetToken(p, seed, 5));
    EXPECT_EQ(PickTargetToken(p, Coupling::kGumbel, seed, 5), GumbelPick(p, seed, 5));
    differ += DrawTargetToken(p, seed, 5) != GumbelPick(p, seed, 5);
  }
  EXPECT_GT(differ, 20);  // two different rules, not one under two names
}

struct VerdictCase {
  std::string name;
  int32_t accepted;  // how many leading guesses equal the target's picks
  bool mismatch;     // whether guess `accepted` differs (else all k are kept)
  int32_t k;
};

TEST(AcceptGuessesGumbelTest, KeepsGuessesEqualToTheTargetsPicksAndReplacesTheFirstOther) {
  const SparseDistribution p_b{{1, 3, 6}, {0.5f, 0.3f, 0.2f}};
  const std::vector<SparseDistribution> p = {kP, p_b, kP, p_b, kP};
  const std::vector<VerdictCase> cases = {
      {"no guesses: the target's pick", 0, false, 0},
      {"all four kept: the bonus pick", 4, false, 4},
      {"first guess wrong", 0, true, 4},
      {"third guess wrong", 2, true, 4},
      {"last guess wrong", 3, true, 4},
  };
  for (const VerdictCase& c : cases) {
    SCOPED_TRACE(c.name);
    constexpr uint64_t kSeed = 11;
    constexpr int64_t kFirst = 30;
    const std::vector<SparseDistribution> rows(p.begin(), p.begin() + c.k + 1);
    const std::vector<int32_t> picks = TargetPicks(rows, kSeed, kFirst);
    std::vector<int32_t> guesses(picks.begin(), picks.begin() + c.k);
    if (c.mismatch) guesses[c.accepted] = picks[c.accepted] == 1 ? 3 : 1;  // in p, not picked
    ASSERT_OK_AND_ASSIGN(AcceptanceResult r, Verdict(guesses, rows, kSeed, kFirst));
    EXPECT_EQ(r.accepted, c.accepted);
    EXPECT_EQ(r.next_token, picks[c.accepted]);
    std::vector<float> tested;
    for (int32_t i = 0; i < c.accepted + (c.mismatch ? 1 : 0); ++i) {
      tested.push_back(DistributionView::Sparse(rows[i]).Probability(guesses[i]));
    }
    EXPECT_THAT(r.guess_probabilities, ElementsAreArray(tested));
  }
}

TEST(AcceptGuessesGumbelTest, GuessOutsideTheTargetsSupportIsReplaced) {
  ASSERT_OK_AND_ASSIGN(AcceptanceResult r, Verdict({99}, {kP, kP}, 1, 0));
  EXPECT_EQ(r.accepted, 0);
  EXPECT_EQ(r.next_token, GumbelPick(DistributionView::Sparse(kP), 1, 0));
  EXPECT_THAT(r.guess_probabilities, ElementsAreArray({0.0f}));
}

TEST(AcceptGuessesGumbelTest, MalformedInputIsAnError) {
  EXPECT_THAT(Verdict({1, 2}, {kP, kP}, 0, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2 guesses")));
  const SparseDistribution empty{{1}, {0.0f}};
  EXPECT_THAT(Verdict({}, {empty}, 0, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("target distribution 0")));
}

// Rounds of k guesses picked from q by the draft: the tokens are the target's own picks
// whatever q is (drafter invariance), and so distributed as p.
TEST(AcceptGuessesGumbelTest, RoundTokensAreTheTargetsPicksWhateverTheDraft) {
  const SparseDistribution q_a{{0, 1, 2, 3, 4, 5}, {0.3f, 0.1f, 0.1f, 0.3f, 0.1f, 0.1f}};
  const SparseDistribution p_b{{1, 3, 6}, {0.5f, 0.3f, 0.2f}};
  const SparseDistribution q_c{{2, 5, 7}, {0.4f, 0.4f, 0.2f}};  // disjoint from p_b
  const std::vector<SparseDistribution> p = {kP, p_b, kP, p_b};
  const std::vector<std::vector<SparseDistribution>> drafts = {
      {q_a}, {kP, q_c}, {q_a, p_b, q_a}, {kP, p_b, kP}};
  std::map<Outcome, int64_t> first;
  for (int64_t seed = 0; seed < kSeeds; ++seed) {
    const std::vector<int32_t> alone = TargetPicks(p, seed, 0);
    for (const std::vector<SparseDistribution>& q : drafts) {
      const std::vector<SparseDistribution> rows(p.begin(), p.begin() + q.size() + 1);
      std::vector<int32_t> guesses = TargetPicks(q, seed, 0);  // the draft picks from q
      ASSERT_OK_AND_ASSIGN(AcceptanceResult r, Verdict(guesses, rows, seed, 0));
      guesses.resize(r.accepted);
      guesses.push_back(r.next_token);
      ASSERT_THAT(guesses, ElementsAreArray(alone.data(), guesses.size())) << seed;
    }
    ++first[{alone[0]}];
  }
  const ChiSquareResult r = ChiSquareTest(first, Expected(kP), kSeeds);
  EXPECT_FALSE(r.rejected()) << r.ToString();
}

double TotalVariation(const SparseDistribution& p, const SparseDistribution& q) {
  double tv = 0;
  for (int32_t id = 0; id < 8; ++id) {
    tv += std::abs(DistributionView::Sparse(p).Probability(id) -
                   DistributionView::Sparse(q).Probability(id));
  }
  return tv / 2;
}

// The price of invariance, measured on a known pair: the standard rule keeps a guess with
// probability 1 - TV, Gumbel coupling with at least (1 - TV) / (1 + TV) of that.
TEST(AcceptGuessesGumbelTest, AcceptanceIsAtLeastTheCouplingBoundOfTheStandardRule) {
  const SparseDistribution q{{0, 1, 2, 3, 4, 5}, {0.3f, 0.1f, 0.1f, 0.3f, 0.1f, 0.1f}};
  const double tv = TotalVariation(kP, q);
  ASSERT_NEAR(tv, 0.55, 1e-6);
  int64_t standard = 0, gumbel = 0;
  for (int64_t seed = 0; seed < kSeeds; ++seed) {
    const double u = CounterUniform(seed, 7, RandomPurpose::kDraftDraw);
    const int32_t drawn = q.ids[Sampler::Draw(q.probabilities, u)];
    const std::vector<DistributionView> qv = {DistributionView::Sparse(q)};
    const std::vector<DistributionView> pv = {DistributionView::Sparse(kP),
                                              DistributionView::Sparse(kP)};
    AcceptanceInput input{absl::MakeConstSpan(&drawn, 1), qv, pv, static_cast<uint64_t>(seed), 7};
    ASSERT_OK_AND_ASSIGN(AcceptanceResult s, AcceptGuesses(input));
    standard += s.accepted;
    const int32_t pick = GumbelPick(DistributionView::Sparse(q), seed, 7);
    ASSERT_OK_AND_ASSIGN(AcceptanceResult g, Verdict({pick}, {kP, kP}, seed, 7));
    gumbel += g.accepted;
  }
  const double standard_rate = static_cast<double>(standard) / kSeeds;
  const double gumbel_rate = static_cast<double>(gumbel) / kSeeds;
  std::printf("acceptance at TV %.3f: standard %.4f (1 - TV = %.4f), gumbel %.4f (bound %.4f)\n",
              tv, standard_rate, 1 - tv, gumbel_rate, (1 - tv) / (1 + tv));
  // Binomial standard deviation at 20000 draws is below 0.0036: allow four of them.
  constexpr double kSlack = 0.015;
  EXPECT_NEAR(standard_rate, 1 - tv, kSlack);
  EXPECT_GE(gumbel_rate, (1 - tv) / (1 + tv) - kSlack);
  EXPECT_LE(gumbel_rate, standard_rate + kSlack);  // the standard rule is the optimal coupling
}

}  // namespace
}  // namespace tandem
