#include "core/generation/sampler.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/generation/random.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::IsOk;
using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr float kTolerance = 1e-6f;

// softmax(values) over the listed ids, zero elsewhere: the expected distribution after the
// filters kept exactly `ids` with (penalised, tempered) logits `values`.
std::vector<float> Kept(int64_t vocab, const std::vector<int>& ids,
                        const std::vector<double>& values) {
  double total = 0;
  for (double v : values) total += std::exp(v);
  std::vector<float> p(vocab, 0.0f);
  for (size_t i = 0; i < ids.size(); ++i)
    p[ids[i]] = static_cast<float>(std::exp(values[i]) / total);
  return p;
}

std::vector<float> DenseDistribution(const SamplerConfig& config, const std::vector<float>& logits,
                                     const std::vector<int32_t>& context) {
  absl::StatusOr<Sampler> sampler = Sampler::Create(config, logits.size());
  EXPECT_THAT(sampler, IsOk());
  std::vector<float> p(logits.size());
  if (sampler.ok()) sampler->Distribution(logits, context, absl::MakeSpan(p));
  return p;
}

void ExpectNear(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], kTolerance) << "token " << i;
  }
}

struct ValidationCase {
  std::string name;
  SamplerConfig config;
  std::string field;
};

TEST(SamplerCreateTest, RejectsEachInvalidFieldByName) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const auto with = [](auto set) {
    SamplerConfig c;
    set(c);
    return c;
  };
  const std::vector<ValidationCase> cases = {
      {"negative temperature", with([](SamplerConfig& c) { c.temperature = -0.1f; }),
       "temperature"},
      {"nan temperature", with([&](SamplerConfig& c) { c.temperature = nan; }), "temperature"},
      {"infinite temperature", with([&](SamplerConfig& c) { c.temperature = inf; }), "temperature"},
      {"negative top_k", with([](SamplerConfig& c) { c.top_k = -1; }), "top_k"},
      {"zero top_p", with([](SamplerConfig& c) { c.top_p = 0.0f; }), "top_p"},
      {"top_p above 1", with([](SamplerConfig& c) { c.top_p = 1.01f; }), "top_p"},
      {"nan top_p", with([&](SamplerConfig& c) { c.top_p = nan; }), "top_p"},
      {"negative min_p", with([](SamplerConfig& c) { c.min_p = -0.01f; }), "min_p"},
      {"min_p of 1", with([](SamplerConfig& c) { c.min_p = 1.0f; }), "min_p"},
      {"nan min_p", with([&](SamplerConfig& c) { c.min_p = nan; }), "min_p"},
      {"zero penalty", with([](SamplerConfig& c) { c.repetition_penalty = 0.0f; }),
       "repetition_penalty"},
      {"negative penalty", with([](SamplerConfig& c) { c.repetition_penalty = -1.1f; }),
       "repetition_penalty"},
      {"infinite penalty", with([&](SamplerConfig& c) { c.repetition_penalty = inf; }),
       "repetition_penalty"},
      {"negative window", with([](SamplerConfig& c) { c.penalty_window = -1; }), "penalty_window"},
      {"bias below -100", with([](SamplerConfig& c) {
         c.logit_bias = {{1, -100.5f}};
       }),
       "logit_bias of token 1 must be in [-100, 100], got -100.5"},
      {"bias above 100", with([](SamplerConfig& c) {
         c.logit_bias = {{2, 101}};
       }),
       "logit_bias of token 2"},
      {"nan bias", with([&](SamplerConfig& c) {
         c.logit_bias = {{1, nan}};
       }),
       "logit_bias"},
      {"infinite bias", with([&](SamplerConfig& c) {
         c.logit_bias = {{1, -inf}};
       }),
       "logit_bias"},
      {"negative bias id", with([](SamplerConfig& c) {
         c.logit_bias = {{-1, 1}};
       }),
       "logit_bias token -1"},
      {"bias ids out of order", with([](SamplerConfig& c) {
         c.logit_bias = {{3, 1}, {2, 1}};
       }),
       "logit_bias token 2 is negative or out of increasing order"},
      {"repeated bias id", with([](SamplerConfig& c) {
         c.logit_bias = {{3, 1}, {3, 2}};
       }),
       "logit_bias token 3"},
      {"presence above 2", with([](SamplerConfig& c) { c.presence_penalty = 2.01f; }),
       "presence_penalty must be in [-2, 2]"},
      {"nan presence", with([&](SamplerConfig& c) { c.presence_penalty = nan; }),
       "presence_penalty"},
      {"frequency below -2", with([](SamplerConfig& c) { c.frequency_penalty = -2.5f; }),
       "frequency_penalty must be in [-2, 2]"},
      {"infinite frequency", with([&](SamplerConfig& c) { c.frequency_penalty = inf; }),
       "frequency_penalty"},
      {"negative output_start", with([](SamplerConfig& c) { c.output_start = -1; }),
       "output_start"},
  };
  for (const ValidationCase& c : cases) {
    EXPECT_THAT(Sampler::Create(c.config, 8),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.field)))
        << c.name;
  }
  EXPECT_THAT(Sampler::Create(SamplerConfig(), 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("vocab_size")));
}

TEST(SamplerCreateTest, AcceptsBoundaryValues) {
  SamplerConfig config;
  config.temperature = 0.0f;
  config.top_k = 0;
  config.top_p = 1.0f;
  config.min_p = 0.0f;
  config.repetition_penalty = 0.5f;
  config.penalty_window = 0;
  config.logit_bias = {{0, -100}, {5, 100}};  // an id beyond the vocabulary: ignored
  config.presence_penalty = -2;
  config.frequency_penalty = 2;
  EXPECT_THAT(Sampler::Create(config, 1), IsOk());
}

TEST(SamplerCreateTest, LogitBiasIdsAreCheckedAgainstTheVocabularyOnRequest) {
  SamplerConfig config;
  config.logit_bias = {{0, 1}, {7, -1}};
  EXPECT_THAT(CheckLogitBiasVocabulary(config, 8), IsOk());
  EXPECT_THAT(CheckLogitBiasVocabulary(config, 7),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "sampler logit_bias token 7 is outside the vocabulary of 7"));
}

// The worked example, exactly.
TEST(SamplerTest, WorkedExampleKeepsThreeTokens) {
  SamplerConfig config;
  config.temperature = 1.0f;
  config.top_p = 0.9f;
  config.min_p = 0.05f;
  const std::vector<float> p = DenseDistribution(config, {2, 1, 0, -1}, {});
  EXPECT_NEAR(p[0], 0.665, 5e-4);
  EXPECT_NEAR(p[1], 0.245, 5e-4);
  EXPECT_NEAR(p[2], 0.090, 5e-4);
  EXPECT_EQ(p[3], 0.0f);
  ExpectNear(p, Kept(4, {0, 1, 2}, {2, 1, 0}));
}

TEST(SamplerTest, WorkedExamplePenaltyDividesPositiveAndMultipliesNegativeLogits) {
  SamplerConfig config;
  config.repetition_penalty = 1.1f;
  // Token 0 (logit 2) becomes 2 / 1.1 = 1.82; token 3 (logit -1) becomes -1.1.
  ExpectNear(DenseDistribution(config, {2, 1, 0, -1}, {0}),
             Kept(4, {0, 1, 2, 3}, {2 / 1.1, 1, 0, -1}));
  ExpectNear(DenseDistribution(config, {2, 1, 0, -1}, {0, 3}),
             Kept(4, {0, 1, 2, 3}, {2 / 1.1, 1, 0, -1.1}));
}

struct StepCase {
  std::string name;
  SamplerConfig config;
  std::vector<float> logits;
  std::vector<int32_t> context;
  std::vector<float> expected;
};

SamplerConfig Config(float temperature, int32_t top_k, float top_p, float min_p,
                     float penalty = 1.0f, int32_t window = 64) {
  SamplerConfig c;
  c.temperature = temperature;
  c.top_k = top_k;
  c.top_p = top_p;
  c.min_p = min_p;
  c.repetition_penalty = penalty;
  c.penalty_window = window;
  return c;
}

TEST(SamplerTest, EachStepAloneAndCombined) {
  const std::vector<float> l = {2, 1, 0, -1};
  const std::vector<StepCase> cases = {
      {"no filter is the softmax", Config(1, 0, 1, 0), l, {}, Kept(4, {0, 1, 2, 3}, {2, 1, 0, -1})},
      {"temperature 0.5 sharpens",
       Config(0.5, 0, 1, 0),
       l,
       {},
       Kept(4, {0, 1, 2, 3}, {4, 2, 0, -2})},
      {"temperature 2 flattens",
       Config(2, 0, 1, 0),
       l,
       {},
       Kept(4, {0, 1, 2, 3}, {1, 0.5, 0, -0.5})},
      {"top_k 2 keeps the two best", Config(1, 2, 1, 0), l, {}, Kept(4, {0, 1}, {2, 1})},
      {"top_k beyond the vocabulary keeps all",
       Config(1, 9, 1, 0),
       l,
       {},
       Kept(4, {0, 1, 2, 3}, {2, 1, 0, -1})},
      {"top_p 0.5 keeps the best alone", Config(1, 0, 0.5, 0), l, {}, Kept(4, {0}, {0})},
      {"top_p 0.7 keeps the smallest set reaching the mass",
       Config(1, 0, 0.7, 0),
       l,
       {},
       Kept(4, {0, 1}, {2, 1})},
      {"top_p 0.9", Config(1, 0, 0.9, 0), l, {}, Kept(4, {0, 1, 2}, {2, 1, 0})},
      {"min_p 0.2 drops weights below 0.2 of the best",
       Config(1, 0, 1, 0.2),
       l,
       {},
       Kept(4, {0, 1}, {2, 1})},
      {"min_p 0.05 drops exp(-3)", Config(1, 0, 1, 0.05), l, {}, Kept(4, {0, 1, 2}, {2, 1, 0})},
      {"penalty changes the ranking",
       Config(1, 0, 1, 0, 2.5),
       {2, 1, 0, -1},
       {0},
       Kept(4, {0, 1, 2, 3}, {0.8, 1, 0, -1})},
      {"penalty applies once to a repeated token",
       Config(1, 0, 1, 0, 2),
       l,
       {0, 0, 0},
       Kept(4, {0, 1, 2, 3}, {1, 1, 0, -1})},
      {"penalty looks only at the window",
       Config(1, 0, 1, 0, 2, 1),
       l,
       {0, 3},
       Kept(4, {0, 1, 2, 3}, {2, 1, 0, -2})},
      {"penalty window 0 disables it",
       Config(1, 0, 1, 0, 2, 0),
       l,
       {0, 3},
       Kept(4, {0, 1, 2, 3}, {2, 1, 0, -1})},
      {"penalty ignores ids outside the vocabulary",
       Config(1, 0, 1, 0, 2),
       l,
       {7, -1},
       Kept(4, {0, 1, 2, 3}, {2, 1, 0, -1})},
      // Penalty: token 0 3 -> 2; T 0.5: [4, 5, 4, 2, 0, -2]; top-k 3: ids 1, 0, 2 (0 beats 2
      // on the tie); top-p 0.7 of {1, e^-1, e^-1}: 1 then 0; min-p 0.3 keeps e^-1 = 0.37.
      {"all five steps in order",
       Config(0.5, 3, 0.7, 0.3, 1.5),
       {3, 2.5, 2, 1, 0, -1},
       {0},
       Kept(6, {0, 1}, {4, 5})},
      {"min_p after top_p drops the survivor",
       Config(0.5, 3, 0.7, 0.4, 1.5),
       {3, 2.5, 2, 1, 0, -1},
       {0},
       Kept(6, {1}, {0})},
  };
  for (const StepCase& c : cases) {
    SCOPED_TRACE(c.name);
    ExpectNear(DenseDistribution(c.config, c.logits, c.context), c.expected);
  }
}

TEST(SamplerTest, TiesRankTheLowerIdFirst) {
  const std::vector<StepCase> cases = {
      {"greedy", Config(0, 0, 1, 0), {1, 3, 3, 0}, {}, {0, 1, 0, 0}},
      {"top_k 1", Config(1, 1, 1, 0), {1, 3, 3, 0}, {}, {0, 1, 0, 0}},
      {"top_k 2 of a three-way tie", Config(1, 2, 1, 0), {3, 3, 3}, {}, {0.5, 0.5, 0}},
      {"top_p 0.5 of a three-way tie", Config(1, 0, 0.5, 0), {3, 3, 3, -50}, {}, {0.5, 0.5, 0, 0}},
  };
  for (const StepCase& c : cases) {
    SCOPED_TRACE(c.name);
    ExpectNear(DenseDistribution(c.config, c.logits, c.context), c.expected);
  }
}

TEST(SamplerTest, GreedyIsTheArgMaxWhateverTheFiltersAndUniform) {
  ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(Config(0, 1, 0.1, 0.9), 3));
  const std::vector<float> logits = {0, 5, 1};
  for (double u : {0.0, 0.5, 0.999999}) {
    EXPECT_EQ(sampler.SampleWithUniform(logits, {}, u), 1) << u;
  }
  std::vector<float> dense(3);
  sampler.Distribution(logits, {}, absl::MakeSpan(dense));
  EXPECT_THAT(dense, ElementsAre(0.0f, 1.0f, 0.0f));
  SparseDistribution sparse;
  sampler.Distribution(logits, {}, &sparse);
  EXPECT_THAT(sparse.ids, ElementsAre(1));
  EXPECT_THAT(sparse.probabilities, ElementsAre(1.0f));
}

TEST(SamplerTest, GreedyAppliesThePenaltyFirst) {
  ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(Config(0, 0, 1, 0, 1.1), 2));
  // 2 / 1.1 = 1.82 < 1.9.
  EXPECT_EQ(sampler.SampleWithUniform({2, 1.9}, {0}, 0.5), 1);
  EXPECT_EQ(sampler.SampleWithUniform({2, 1.9}, {}, 0.5), 0);
}

TEST(SamplerTest, SampleDrawsByTokenIdOverTheKeptMass) {
  ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(Config(1, 0, 0.9, 0.05), 4));
  const std::vector<float> logits = {-1, 0, 1, 2};  // keeps 1, 2, 3
  std::vector<float> p(4);
  sampler.Distribution(logits, {}, absl::MakeSpan(p));
  // The midpoint of each kept token's interval of the cumulative distribution draws it.
  double below = 0;
  for (int32_t id = 1; id < 4; ++id) {
    EXPECT_EQ(sampler.SampleWithUniform(logits, {}, below + p[id] / 2), id);
    below += p[id];
  }
  EXPECT_EQ(sampler.SampleWithUniform(logits, {}, 0.0), 1);
  EXPECT_EQ(sampler.SampleWithUniform(logits, {}, std::nextafter(1.0, 0.0)), 3);
}

TEST(SamplerTest, SampleUsesTheCounterBasedUniformOfSeedPositionAndPurpose) {
  SamplerConfig config = Config(1, 0, 1, 0);
  config.seed = 1234;
  ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(config, 16));
  std::vector<float> logits(16);
  for (int i = 0; i < 16; ++i) logits[i] = static_cast<float>(i % 5) * 0.3f;
  for (int64_t position = 0; position < 50; ++position) {
    for (RandomPurpose purpose : {RandomPurpose::kSample, RandomPurpose::kDraftDraw}) {
      const double u = CounterUniform(1234, position, purpose);
      EXPECT_EQ(sampler.Sample(logits, {}, position, purpose),
                sampler.SampleWithUniform(logits, {}, u));
    }
  }
}

TEST(SamplerTest, SparseFormHasIncreasingIdsAndTheDenseProbabilities) {
  SamplerConfig config = Config(0.8, 40, 0.95, 0.02, 1.1);
  ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(config, 512));
  std::vector<float> logits(512);
  for (int i = 0; i < 512; ++i) logits[i] = std::sin(i * 0.37f) * 4.0f;
  const std::vector<int32_t> context = {5, 17, 300, 5};
  std::vector<float> dense(512);
  sampler.Distribution(logits, context, absl::MakeSpan(dense));
  SparseDistribution sparse;
  sampler.Distribution(logits, context, &sparse);
  ASSERT_EQ(sparse.ids.size(), sparse.probabilities.size());
  ASSERT_GE(sparse.ids.size(), 2u);
  ASSERT_LE(sparse.ids.size(), 40u);
  double total = 0;
  size_t next = 0;
  for (int32_t id = 0; id < 512; ++id) {
    if (dense[id] == 0.0f) continue;
    ASSERT_LT(next, sparse.ids.size());
    EXPECT_EQ(sparse.ids[next], id);
    EXPECT_EQ(sparse.probabilities[next], dense[id]);
    total += dense[id];
    ++next;
  }
  EXPECT_EQ(next, sparse.ids.size());
  EXPECT_NEAR(total, 1.0, 1e-6);
}

TEST(SamplerTest, TopPWidensItsPartialSortWhenTheMassNeedsManyTokens) {
  // A flat distribution over 1000 ids: top-p 0.9 needs 900 of them, past the first partial
  // sort's 64 and its 256.
  ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(Config(1, 0, 0.9, 0), 1000));
  std::vector<float> logits(1000, 0.0f);
  SparseDistribution sparse;
  sampler.Distribution(logits, {}, &sparse);
  ASSERT_EQ(sparse.ids.size(), 900u);
  EXPECT_EQ(sparse.ids.front(), 0);
  EXPECT_EQ(sparse.ids.back(), 899);
}

// Issue #10, item 2: min-p with top-p 1 kept only the ids at the front of the unsorted order
// (and aborted when the best id was not among them).
TEST(SamplerTest, MinPKeepsEveryWeightAtOrAboveTheThresholdWhateverItsId) {
  const std::vector<double> w = {.01, .3, 1, .2, .5, .001, .4, .1};
  std::vector<float> logits;
  for (double x : w) logits.push_back(static_cast<float>(std::log(x)));
  ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(Config(1, 0, 1, 0.05f), 8));
  SparseDistribution sparse;
  sampler.Distribution(logits, {}, &sparse);
  EXPECT_THAT(sparse.ids, ElementsAre(1, 2, 3, 4, 6, 7));
  const double kept = .3 + 1 + .2 + .5 + .4 + .1;
  std::vector<float> expected(8, 0.0f);
  for (int id : {1, 2, 3, 4, 6, 7}) expected[id] = static_cast<float>(w[id] / kept);
  ExpectNear(DenseDistribution(Config(1, 0, 1, 0.05f), logits, {}), expected);
}

TEST(SamplerTest, MinPWithTopPOneNeverLosesTheBestCandidate) {
  // The settings that killed both workers: {temperature 0.8, top_p 1, min_p 0.05}.
  const std::vector<StepCase> cases = {
      {"best id last",
       Config(0.8, 0, 1, 0.05),
       {-5, -5, -5, -5, -5, -5, -5, 0},
       {},
       {0, 0, 0, 0, 0, 0, 0, 1}},
      {"kept ids after the dropped ones",
       Config(0.8, 0, 1, 0.05),
       {-9, -9, 0, 0},
       {},
       {0, 0, 0.5, 0.5}},
      {"top_k with min_p",
       Config(1, 3, 1, 0.05),
       {0, std::log(0.5f), std::log(0.01f), std::log(0.001f)},
       {},
       Kept(4, {0, 1}, {0, std::log(0.5)})},
  };
  for (const StepCase& c : cases) {
    SCOPED_TRACE(c.name);
    ExpectNear(DenseDistribution(c.config, c.logits, c.context), c.expected);
    ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(c.config, c.logits.size()));
    for (double u : {0.0, 0.3, 0.7, std::nextafter(1.0, 0.0)}) {
      const int32_t token = sampler.SampleWithUniform(c.logits, {}, u);
      ASSERT_GE(token, 0);
      ASSERT_LT(token, static_cast<int32_t>(c.logits.size()));
      EXPECT_GT(c.expected[token], 0.0f) << "u " << u;
    }
  }
}

// Issue #10, item 1: every setting Create accepts is computable; what overflows saturates.
TEST(SamplerTest, ExtremePenaltiesTemperaturesAndLogitsStayFinite) {
  const float kMax = std::numeric_limits<float>::max();
  const std::vector<StepCase> cases = {
      // 5 / 1e-38 and 4 / 1e-38 overflow float: both saturate at FLT_MAX and tie.
      {"penalty 1e-38 saturates positive logits",
       Config(1, 0, 1, 0, 1e-38f),
       {5, 4, 0.5, -1},
       {0, 1},
       {0.5, 0.5, 0, 0}},
      {"penalty 1e-38 with every filter",
       Config(0.8, 40, 0.95, 0.05, 1e-38f),
       {5, 4, 0.5, -1},
       {0, 1, 3},
       {0.5, 0.5, 0, 0}},
      {"penalty 1e-38 greedy", Config(0, 0, 1, 0, 1e-38f), {5, 4, 6, -1}, {1}, {0, 1, 0, 0}},
      // -5 * 1e38 saturates at -FLT_MAX; 0.5 / 1e38 is a tiny positive logit.
      {"penalty 1e38 saturates negative logits",
       Config(1, 0, 1, 0, 1e38f),
       {1, 0, -5, 0.5},
       {2, 3},
       Kept(4, {0, 1, 3}, {1, 0, 0.5 / 1e38})},
      {"temperature 1e-30 keeps the best alone",
       Config(1e-30f, 0, 1, 0),
       {1, 0.999f, -1},
       {},
       {1, 0, 0}},
      {"temperature 1e30 is uniform",
       Config(1e30f, 0, 1, 0),
       {3, -2, 5, 0},
       {},
       {0.25, 0.25, 0.25, 0.25}},
      {"logits of +-1e30", Config(1, 0, 1, 0), {1e30f, -1e30f, 1e30f}, {}, {0.5, 0, 0.5}},
      {"logits of +-FLT_MAX", Config(2, 0, 0.9, 0.01), {-kMax, kMax, kMax}, {}, {0, 0.5, 0.5}},
      {"all-equal logits", Config(1, 0, 1, 0.9), {7, 7, 7, 7}, {}, {0.25, 0.25, 0.25, 0.25}},
  };
  for (const StepCase& c : cases) {
    SCOPED_TRACE(c.name);
    ExpectNear(DenseDistribution(c.config, c.logits, c.context), c.expected);
  }
}

// A model that emits NaN or infinities must not crash the sampler: NaN reads as -inf, +inf as
// FLT_MAX, and with nothing finite all mass goes to id 0.
TEST(SamplerTest, NonFiniteLogitsGiveADeterministicValidDistribution) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<StepCase> cases = {
      {"nan is never kept", Config(1, 0, 1, 0), {nan, 0, nan, 0}, {}, {0, 0.5, 0, 0.5}},
      {"+inf ties at the largest float",
       Config(1, 0, 1, 0),
       {nan, 1, inf, -inf, inf},
       {},
       {0, 0, 0.5, 0, 0.5}},
      {"penalised +inf", Config(1, 0, 1, 0, 1e-38f), {inf, 1, inf}, {0}, {0.5, 0, 0.5}},
      {"nothing finite: id 0", Config(1, 0, 0.5, 0.5), {nan, -inf, nan}, {}, {1, 0, 0}},
      {"nothing finite, penalised: id 0",
       Config(0.8, 2, 1, 0, 1e-38f),
       {-inf, nan},
       {0, 1},
       {1, 0}},
      {"greedy skips nan", Config(0, 0, 1, 0), {nan, 1, 2, nan}, {}, {0, 0, 1, 0}},
      {"greedy with nothing finite", Config(0, 0, 1, 0), {nan, nan}, {}, {1, 0}},
  };
  for (const StepCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::vector<float> p = DenseDistribution(c.config, c.logits, c.context);
    ExpectNear(p, c.expected);
    ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(c.config, c.logits.size()));
    for (double u : {0.0, 0.5, std::nextafter(1.0, 0.0)}) {
      const int32_t token = sampler.SampleWithUniform(c.logits, c.context, u);
      ASSERT_GE(token, 0);
      ASSERT_LT(token, static_cast<int32_t>(c.logits.size()));
      EXPECT_GT(c.expected[token], 0.0f) << "u " << u;
    }
  }
}

// --- The mask of allowed tokens ---------------------------------------------------------------

TokenMask MaskOf(int64_t vocab, const std::vector<int32_t>& allowed) {
  TokenMask mask;
  mask.Resize(vocab);
  for (int32_t id : allowed) mask.Allow(id);
  return mask;
}

struct MaskCase {
  std::string name;
  SamplerConfig config;
  std::vector<float> logits;
  std::vector<int32_t> context;
  std::vector<int32_t> allowed;
  std::vector<float> expected;
};

TEST(SamplerMaskTest, RefusedTokensGetNoMassAndTheStepsRunOverTheAllowedOnes) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float l1 = 0, l04 = std::log(0.4f), l08 = std::log(0.8f), l10 = std::log(10.0f);
  const std::vector<MaskCase> cases = {
      {"renormalised over the allowed",
       Config(1, 0, 1, 0),
       {1, 2, 3, 4},
       {},
       {0, 2},
       Kept(4, {0, 2}, {1, 3})},
      {"greedy: the arg max of the allowed",
       Config(0, 0, 1, 0),
       {1, 2, 3, 4},
       {},
       {0, 1},
       {0, 1, 0, 0}},
      {"greedy ties: the lower allowed id",
       Config(0, 0, 1, 0),
       {5, 1, 1, 5},
       {},
       {1, 2},
       {0, 1, 0, 0}},
      {"top-k ranks the allowed only", Config(1, 1, 1, 0), {1, 2, 3, 4}, {}, {0, 2}, {0, 0, 1, 0}},
      {"top-p measures the allowed mass",
       Config(1, 0, 0.5f, 0),
       {l08, l1, l04, l10},
       {},
       {0, 1, 2},
       Kept(4, {0, 1}, {l08, l1})},
      {"min-p is relative to the best allowed",
       Config(1, 0, 1, 0.5f),
       {l1, l04, l08, l10},
       {},
       {0, 1, 2},
       Kept(4, {0, 2}, {l1, l08})},
      {"no finite allowed logit: the lowest allowed id",
       Config(1, 0, 1, 0),
       {1, nan, -inf, 2},
       {},
       {1, 2},
       {0, 1, 0, 0}},
      {"the penalty cannot revive a refused token",
       Config(1, 0, 1, 0, 2.0f),
       {-1, 5, 2},
       {0, 2},
       {1, 2},
       Kept(3, {1, 2}, {5, 1})},
  };
  for (const MaskCase& c : cases) {
    SCOPED_TRACE(c.name);
    const int64_t vocab = static_cast<int64_t>(c.logits.size());
    const TokenMask mask = MaskOf(vocab, c.allowed);
    ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(c.config, vocab));
    std::vector<float> p(vocab);
    sampler.Distribution(c.logits, c.context, absl::MakeSpan(p), &mask);
    ExpectNear(p, c.expected);
    SparseDistribution sparse;
    sampler.Distribution(c.logits, c.context, &sparse, &mask);
    std::vector<int32_t> support;
    for (int32_t id = 0; id < vocab; ++id) {
      if (p[id] > 0) support.push_back(id);
    }
    EXPECT_EQ(sparse.ids, support);
    for (double u : {0.0, 0.3, 0.7, std::nextafter(1.0, 0.0)}) {
      const int32_t token = sampler.SampleWithUniform(c.logits, c.context, u, &mask);
      ASSERT_GE(token, 0);
      EXPECT_TRUE(mask.Allowed(token)) << "u " << u << " drew " << token;
      EXPECT_GT(c.expected[token], 0.0f) << "u " << u;
    }
  }
}

TEST(SamplerMaskTest, IdsBeyondTheMasksWordsAreRefused) {
  std::vector<float> logits(70, 0.0f);
  logits[69] = 50;  // the best, but the mask's one word ends at id 63
  const TokenMask mask = MaskOf(64, {3, 5});
  for (const SamplerConfig& config : {Config(0, 0, 1, 0), Config(1, 0, 1, 0)}) {
    ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(config, 70));
    SparseDistribution sparse;
    sampler.Distribution(logits, {}, &sparse, &mask);
    const std::vector<int32_t> expected =
        config.temperature == 0 ? std::vector<int32_t>{3} : std::vector<int32_t>{3, 5};
    EXPECT_EQ(sparse.ids, expected);
  }
}

TEST(SamplerMaskTest, AMaskAllowingEverythingChangesNoValueAndNoDraw) {
  std::vector<float> logits(300);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = 3 * std::sin(0.37f * i);
  const std::vector<int32_t> context = {5, 9, 200, 5};
  TokenMask all;
  all.Resize(300);
  for (int32_t id = 0; id < 300; ++id) all.Allow(id);
  for (const SamplerConfig& config :
       {Config(0, 0, 1, 0), Config(1, 0, 1, 0), Config(0.7f, 40, 0.9f, 0.05f, 1.3f)}) {
    ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(config, 300));
    std::vector<float> plain(300), masked(300);
    sampler.Distribution(logits, context, absl::MakeSpan(plain));
    sampler.Distribution(logits, context, absl::MakeSpan(masked), &all);
    EXPECT_EQ(plain, masked);
    for (int64_t position = 0; position < 50; ++position) {
      EXPECT_EQ(sampler.Sample(logits, context, position),
                sampler.Sample(logits, context, position, RandomPurpose::kSample, &all));
    }
  }
}

// A dead end: nothing to draw from, and nothing drawn (the callers report it before sampling).
TEST(SamplerMaskTest, AMaskAllowingNoTokenOfTheVocabularyLeavesNoCandidate) {
  const std::vector<float> logits = {1, 2, 3, 4};
  const TokenMask none = MaskOf(4, {});
  TokenMask beyond;  // allows only ids the vocabulary lacks (a draft's smaller vocabulary)
  beyond.Resize(70);
  beyond.Allow(66);
  for (const TokenMask* mask : std::vector<const TokenMask*>{&none, &beyond}) {
    for (const SamplerConfig& config : {Config(0, 0, 1, 0), Config(1, 0, 0.9f, 0.1f)}) {
      ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(config, 4));
      std::vector<float> p(4, 7.0f);
      sampler.Distribution(logits, {}, absl::MakeSpan(p), mask);
      EXPECT_THAT(p, ElementsAre(0, 0, 0, 0));
      SparseDistribution sparse;
      sampler.Distribution(logits, {}, &sparse, mask);
      EXPECT_TRUE(sparse.ids.empty());
      EXPECT_TRUE(sparse.probabilities.empty());
      EXPECT_EQ(sampler.SampleWithUniform(logits, {}, 0.5, mask), -1);
      EXPECT_EQ(sampler.Sample(logits, {}, 3, RandomPurpose::kSample, mask), -1);
    }
  }
}

struct DrawCase {
  std::vector<float> weights;
  double uniform;
  int64_t expected;
};

TEST(SamplerDrawTest, PicksTheFirstIndexWhoseRunningTotalExceedsTheThreshold) {
  const std::vector<DrawCase> cases = {
      {{0, 1, 0, 3}, 0.0, 1},
      {{0, 1, 0, 3}, 0.2499, 1},
      {{0, 1, 0, 3}, 0.25, 3},
      {{0, 1, 0, 3}, 0.9999, 3},
      {{2}, 0.7, 0},
      {{5, 5}, 0.5, 1},
      {{0.5, 0.5, 0}, 0.999999999, 1},
      {{0, 0, 0}, 0.5, -1},
      {{std::nanf(""), 1, std::nanf("")}, 0.0, 1},
      {{std::nanf(""), -1}, 0.5, -1},
      {{}, 0.5, -1},
  };
  for (const DrawCase& c : cases) {
    EXPECT_EQ(Sampler::Draw(c.weights, c.uniform), c.expected)
        << "weights " << ::testing::PrintToString(c.weights) << " u " << c.uniform;
  }
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

// The OpenAI steps, exactly: logits {1, 2, 3, 4}; the prompt is context[0, 3), the output
// context[3..] = {0, 0, 2}: id 0 occurs twice, id 2 once; id 3 only in the prompt.
struct OpenAiStepCase {
  std::string name;
  std::vector<LogitBias> bias;
  float presence = 0;
  float frequency = 0;
  std::vector<double> expected;  // the logits after the steps (T = 1: their softmax)
};

TEST(SamplerOpenAiStepsTest, BiasAndPenaltiesOverTheGeneratedTokensOnly) {
  const std::vector<float> logits = {1, 2, 3, 4};
  const std::vector<int32_t> context = {3, 3, 1, 0, 0, 2};
  const std::vector<OpenAiStepCase> cases = {
      {"nothing", {}, 0, 0, {1, 2, 3, 4}},
      {"presence once per generated id", {}, 0.5f, 0, {0.5, 2, 2.5, 4}},
      {"frequency per occurrence", {}, 0, 0.25f, {0.5, 2, 2.75, 4}},
      {"both", {}, 0.5f, 0.25f, {0, 2, 2.25, 4}},
      {"negative penalties encourage", {}, -1, -1, {4, 2, 5, 4}},
      {"bias alone", {{1, 1.5f}, {3, -2}}, 0, 0, {1, 3.5, 3, 2}},
      {"bias with penalties", {{0, 3}, {2, -0.5f}}, 0.5f, 0.25f, {3, 2, 1.75, 4}},
  };
  for (const OpenAiStepCase& c : cases) {
    SamplerConfig config;
    config.logit_bias = c.bias;
    config.presence_penalty = c.presence;
    config.frequency_penalty = c.frequency;
    config.output_start = 3;
    SCOPED_TRACE(c.name);
    ExpectNear(DenseDistribution(config, logits, context), Kept(4, {0, 1, 2, 3}, c.expected));
  }
}

TEST(SamplerOpenAiStepsTest, AfterTheRepetitionPenaltyWhichSeesTheWholeWindow) {
  SamplerConfig config;
  config.repetition_penalty = 2;  // over the prompt too: ids 3 and 0
  config.frequency_penalty = 1;   // over the output only: id 0
  config.output_start = 1;
  // id 0: 2 / 2 - 1 = 0; id 3: 4 / 2 = 2.
  ExpectNear(DenseDistribution(config, {2, 1, 0, 4}, {3, 0}), Kept(4, {0, 1, 2, 3}, {0, 1, 0, 2}));
}

TEST(SamplerOpenAiStepsTest, MinusOneHundredBansAndPlusOneHundredForcesGreedy) {
  SamplerConfig greedy;
  greedy.temperature = 0;
  const std::vector<float> logits = {1, 200, 3, 4};  // id 1 wins by far
  greedy.logit_bias = {{1, -100}};
  ASSERT_OK_AND_ASSIGN(Sampler ban, Sampler::Create(greedy, 4));
  EXPECT_EQ(ban.Sample(logits, {}, 0), 3);  // banned outright, not just 100 lower
  greedy.logit_bias = {{0, 100}};
  ASSERT_OK_AND_ASSIGN(Sampler force, Sampler::Create(greedy, 4));
  EXPECT_EQ(force.Sample({1, 2, 3, 4}, {}, 0), 0);
  // Sampled: a banned token has no mass whatever the temperature.
  SamplerConfig hot;
  hot.temperature = 1e30f;
  hot.logit_bias = {{2, -100}};
  EXPECT_EQ(DenseDistribution(hot, {1, 2, 3, 4}, {})[2], 0.0f);
}

TEST(SamplerOpenAiStepsTest, ABannedForcedTokenStillWinsUnderAMaskAllowingOnlyIt) {
  // A constraint's forced token keeps probability 1 (what free guesses rely on).
  SamplerConfig config;
  config.logit_bias = {{2, -100}};
  TokenMask mask;
  mask.Resize(4);
  mask.Allow(2);
  ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(config, 4));
  std::vector<float> p(4);
  sampler.Distribution({1, 2, 3, 4}, {}, absl::MakeSpan(p), &mask);
  EXPECT_THAT(p, ElementsAre(0, 0, 1, 0));
}

TEST(SamplerOpenAiStepsTest, OutputStartMovesWhatCountsAndSetOutputStartChangesIt) {
  SamplerConfig config;
  config.temperature = 0;
  config.presence_penalty = 2;
  ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(config, 3));
  const std::vector<float> logits = {0, 1, 0.5f};
  const std::vector<int32_t> context = {1, 2};
  EXPECT_EQ(sampler.Sample(logits, context, 2), 0);  // output_start 0: 1 and 2 penalised
  sampler.set_output_start(1);
  EXPECT_EQ(sampler.Sample(logits, context, 2), 1);  // only 2 is output
  sampler.set_output_start(5);                       // beyond the context: nothing counts
  EXPECT_EQ(sampler.Sample(logits, context, 2), 1);
}

}  // namespace
}  // namespace tandem
