// The sampler against a brute-force reference: a plain O(V log V) implementation of Hugging
// Face's order (repetition penalty -> OpenAI's logit_bias, presence and frequency penalties ->
// temperature -> top-k -> top-p -> min-p) in this file,
// computed in double over the whole vocabulary with one full sort, and the real Sampler's kept
// set (exactly) and probabilities (relative 1e-6) compared on thousands of random logit vectors
// and settings with every edge: top-k 0/1/V, top-p tiny/1, min-p 0/near 1, temperatures
// 1e-30..1e30, penalties 1e-38..1e38, logits +-1e30, all-equal and non-finite logits, small
// and odd vocabulary sizes. Fixed seed; about half a second (8 s in the ASan debug build).
//
// The rules both sides follow (sampler.h states them for the Sampler):
//  - A logit that is NaN reads as -inf, +inf as FLT_MAX; -inf is never kept. With no finite
//    logit all mass goes to id 0. Temperature 0 is greedy: the arg max, lowest id on ties.
//  - Mask (a third of the cases, of every shape: sparse, dense, one id, none, all): the steps
//    run over the allowed ids alone, as if the vocabulary held only those; with no finite
//    allowed logit all mass goes to the lowest allowed id; with none allowed nothing is kept
//    and a draw gives -1.
//  - Penalty, once per distinct id among the last `penalty_window` context ids in the
//    vocabulary: logit / penalty if logit > 0, else logit * penalty, in double, clamped to
//    [-FLT_MAX, FLT_MAX], rounded to float. (The Sampler clamps deliberately: unclamped,
//    1e-38 and 1e38 overflow to inf, and inf - inf is NaN.)
//  - Additive, after the penalty, for each id with a bias b or c > 0 occurrences in
//    context[output_start..] (ids in the vocabulary): -inf stays -inf, b = -100 is -inf,
//    else ((l + b) - presence * (c > 0)) - frequency * c in double, clamped, rounded to float.
//  - Rank: logit descending, then id ascending (ties by the lower id).
//  - Weight: w = float(exp((double(logit) - double(best)) / double(T))); w < 2^-64 is 0.
//  - Top-k: the first k of the rank (k = 0 or k >= V keeps all).
//  - Top-p: M = sum of the top-k survivors' w in increasing id order; keep the smallest rank
//    prefix whose running sum is >= top_p * M (mass exactly reached is reached); all if none.
//  - Min-p: keep w >= min_p * (the largest kept w) (a weight exactly at the threshold stays).
//  - Probability: w / (sum of kept w). A draw with uniform u: the first id, in id order,
//    whose running sum of kept weights exceeds u * total (the last kept id if none does).
//
// Why the kept set can be compared exactly: both sides compute each weight with the same
// double expression, so they hold the same floats, and every decision above is a comparison
// of sums taken in an order the rules fix. What the reference checks independently is
// everything else: the penalty window, the ranking and its ties, the top-k partition, top-p's
// widening partial sort, min-p, the zeroing of what was dropped, the fallbacks and the draw.
// Why relative 1e-6 for probabilities: the Sampler rounds w / total to float (relative error at
// most 2^-24 ~ 6e-8; every kept probability is >= 2^-64 / V, a normal float) and sums the
// total in another order (relative error ~V * 2^-53); 1e-6 is 16 times the worst case.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/generation/sampler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;

constexpr float kFloatMax = std::numeric_limits<float>::max();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kRelativeTolerance = 1e-6;
constexpr double kPi = 3.14159265358979323846;

// OpenAI's additive steps on the penalised logits `l`, over the whole vocabulary.
void ReferenceAdditive(const SamplerConfig& c, const std::vector<int32_t>& context,
                       std::vector<float>& l) {
  const int64_t vocab = static_cast<int64_t>(l.size());
  std::map<int32_t, int32_t> count;
  for (size_t i = static_cast<size_t>(std::min<int64_t>(c.output_start, context.size()));
       i < context.size(); ++i) {
    if (context[i] >= 0 && context[i] < vocab) ++count[context[i]];
  }
  const bool penalised = c.presence_penalty != 0 || c.frequency_penalty != 0;
  std::map<int32_t, float> bias;
  for (const LogitBias& e : c.logit_bias) bias[e.token] = e.bias;
  for (int32_t id = 0; id < vocab; ++id) {
    const int32_t n = penalised && count.count(id) ? count[id] : 0;
    if (n == 0 && !bias.count(id)) continue;
    const float b = bias.count(id) ? bias[id] : 0.0f;
    if (l[id] == -kInf || b == -100.0f) {
      l[id] = -kInf;
      continue;
    }
    double v = static_cast<double>(l[id]) + b;
    if (n > 0) v -= c.presence_penalty;
    v -= static_cast<double>(c.frequency_penalty) * n;
    l[id] = static_cast<float>(std::min<double>(std::max<double>(v, -kFloatMax), kFloatMax));
  }
}

// The logits after sanitising, the repetition penalty and the additive steps.
std::vector<float> ReferenceLogits(const SamplerConfig& c, const std::vector<float>& logits,
                                   const std::vector<int32_t>& context) {
  const int64_t vocab = static_cast<int64_t>(logits.size());
  std::vector<float> l(logits);
  for (float& x : l) {
    if (std::isnan(x)) x = -kInf;
    if (x == kInf) x = kFloatMax;
  }
  if (c.repetition_penalty == 1.0f || c.penalty_window == 0) {
    ReferenceAdditive(c, context, l);
    return l;
  }
  std::set<int32_t> penalised;
  const size_t window = std::min<size_t>(context.size(), c.penalty_window);
  for (size_t i = context.size() - window; i < context.size(); ++i) {
    if (context[i] >= 0 && context[i] < vocab) penalised.insert(context[i]);
  }
  for (int32_t id : penalised) {
    if (l[id] == -kInf) continue;
    const double x = l[id];
    const double v = x > 0 ? x / c.repetition_penalty : x * c.repetition_penalty;
    l[id] = static_cast<float>(std::min<double>(std::max<double>(v, -kFloatMax), kFloatMax));
  }
  ReferenceAdditive(c, context, l);
  return l;
}

// The reference's result: the kept weights (0 elsewhere) and the probabilities.
struct Reference {
  std::vector<double> weights;
  std::vector<double> p;
};

// `allowed`: the mask's ids (empty: no mask).
Reference ReferenceDistribution(const SamplerConfig& c, const std::vector<float>& logits,
                                const std::vector<int32_t>& context,
                                const std::vector<bool>& allowed = {}) {
  const int64_t vocab = static_cast<int64_t>(logits.size());
  const std::vector<float> l = ReferenceLogits(c, logits, context);
  // The candidates: the allowed ids, ranked; the rest of the vocabulary does not exist.
  std::vector<int32_t> rank;
  for (int32_t id = 0; id < vocab; ++id) {
    if (allowed.empty() || allowed[id]) rank.push_back(id);
  }
  std::sort(rank.begin(), rank.end(),
            [&](int32_t a, int32_t b) { return l[a] != l[b] ? l[a] > l[b] : a < b; });
  Reference out{std::vector<double>(vocab, 0.0), std::vector<double>(vocab, 0.0)};
  if (rank.empty()) return out;
  const int32_t best = rank[0];
  if (c.temperature == 0.0f || l[best] == -kInf) {
    out.weights[best] = out.p[best] = 1.0;
    return out;
  }
  std::vector<double> w(vocab);
  for (int64_t i = 0; i < vocab; ++i) {
    w[i] = static_cast<float>(std::exp((static_cast<double>(l[i]) - l[best]) / c.temperature));
    if (w[i] < 0x1p-64) w[i] = 0;
  }
  std::vector<bool> keep(vocab, false);
  const int64_t candidates = static_cast<int64_t>(rank.size());
  const int64_t k = c.top_k == 0 || c.top_k >= candidates ? candidates : c.top_k;
  for (int64_t j = 0; j < k; ++j) keep[rank[j]] = true;
  if (c.top_p < 1.0f) {
    double mass = 0;
    for (int64_t i = 0; i < vocab; ++i) mass += keep[i] ? w[i] : 0.0;
    const double needed = static_cast<double>(c.top_p) * mass;
    int64_t m = k;
    double running = 0;
    for (int64_t j = 0; j < k; ++j) {
      running += w[rank[j]];
      if (running >= needed) {
        m = j + 1;
        break;
      }
    }
    for (int64_t j = m; j < k; ++j) keep[rank[j]] = false;
  }
  if (c.min_p > 0.0f) {
    double top = 0;
    for (int64_t i = 0; i < vocab; ++i) top = keep[i] ? std::max(top, w[i]) : top;
    for (int64_t i = 0; i < vocab; ++i) keep[i] = keep[i] && w[i] >= c.min_p * top;
  }
  double total = 0;
  for (int64_t i = 0; i < vocab; ++i) out.weights[i] = keep[i] ? w[i] : 0.0;
  for (int64_t i = 0; i < vocab; ++i) total += out.weights[i];
  for (int64_t i = 0; i < vocab; ++i) out.p[i] = out.weights[i] / total;
  return out;
}

int32_t ReferenceDraw(const std::vector<double>& weights, double uniform) {
  double total = 0;
  for (double w : weights) total += w;
  double running = 0;
  int32_t last = -1;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] == 0) continue;
    running += weights[i];
    last = static_cast<int32_t>(i);
    if (running > uniform * total) break;
  }
  return last;
}

std::string Describe(const SamplerConfig& c, const std::vector<float>& logits,
                     const std::vector<int32_t>& context) {
  std::ostringstream out;
  out.precision(9);
  out << "T " << c.temperature << " top_k " << c.top_k << " top_p " << c.top_p << " min_p "
      << c.min_p << " penalty " << c.repetition_penalty << " window " << c.penalty_window
      << " presence " << c.presence_penalty << " frequency " << c.frequency_penalty
      << " output_start " << c.output_start << " logit_bias " << c.logit_bias.size() << " vocab "
      << logits.size() << " logits";
  for (size_t i = 0; i < std::min<size_t>(logits.size(), 16); ++i) out << " " << logits[i];
  out << (logits.size() > 16 ? " ..." : "") << " context";
  for (size_t i = 0; i < std::min<size_t>(context.size(), 16); ++i) out << " " << context[i];
  return out.str();
}

// Compares the Sampler with the reference on one case: the kept set exactly, the
// probabilities within kRelativeTolerance, the sparse form, and draws at `uniforms`.
// `allowed`: the mask's ids (empty: no mask).
::testing::AssertionResult AgreesWithReference(const SamplerConfig& config,
                                               const std::vector<float>& logits,
                                               const std::vector<int32_t>& context,
                                               const std::vector<double>& uniforms,
                                               const std::vector<bool>& allowed = {}) {
  absl::StatusOr<Sampler> sampler = Sampler::Create(config, logits.size());
  if (!sampler.ok()) return ::testing::AssertionFailure() << sampler.status();
  const Reference ref = ReferenceDistribution(config, logits, context, allowed);
  TokenMask mask;
  mask.Resize(static_cast<int64_t>(allowed.size()));
  for (size_t id = 0; id < allowed.size(); ++id) {
    if (allowed[id]) mask.Allow(static_cast<int32_t>(id));
  }
  const TokenMask* masked = allowed.empty() ? nullptr : &mask;
  std::vector<float> dense(logits.size());
  sampler->Distribution(logits, context, absl::MakeSpan(dense), masked);
  std::vector<int32_t> kept;
  for (size_t i = 0; i < logits.size(); ++i) {
    if ((dense[i] > 0) != (ref.p[i] > 0)) {
      return ::testing::AssertionFailure()
             << "id " << i << " kept by the " << (dense[i] > 0 ? "sampler" : "reference")
             << " only (p " << dense[i] << " vs " << ref.p[i] << "); "
             << Describe(config, logits, context);
    }
    if (std::abs(dense[i] - ref.p[i]) > kRelativeTolerance * ref.p[i]) {
      return ::testing::AssertionFailure() << "id " << i << " p " << dense[i] << " vs reference "
                                           << ref.p[i] << "; " << Describe(config, logits, context);
    }
    if (dense[i] > 0) kept.push_back(static_cast<int32_t>(i));
  }
  SparseDistribution sparse;
  sampler->Distribution(logits, context, &sparse, masked);
  if (sparse.ids != kept) {
    return ::testing::AssertionFailure()
           << "sparse ids differ from the dense support; " << Describe(config, logits, context);
  }
  for (size_t e = 0; e < kept.size(); ++e) {
    if (sparse.probabilities[e] != dense[kept[e]]) {
      return ::testing::AssertionFailure()
             << "sparse probability of id " << kept[e] << " is " << sparse.probabilities[e]
             << ", dense " << dense[kept[e]];
    }
  }
  for (double u : uniforms) {
    const int32_t token = sampler->SampleWithUniform(logits, context, u, masked);
    const int32_t expected = ReferenceDraw(ref.weights, u);
    if (token != expected) {
      return ::testing::AssertionFailure() << "u " << u << " draws " << token << ", reference "
                                           << expected << "; " << Describe(config, logits, context);
    }
  }
  return ::testing::AssertionSuccess();
}

// A fixed-seed source of the random cases, with every edge among its choices.
class CaseGenerator {
 public:
  explicit CaseGenerator(uint64_t seed) : engine_(seed) {}

  double Uniform() { return static_cast<double>(engine_() >> 11) * 0x1p-53; }  // [0, 1)
  int64_t Below(int64_t n) { return static_cast<int64_t>(engine_() % static_cast<uint64_t>(n)); }
  double LogUniform(double lo, double hi) {
    return std::exp(std::log(lo) + Uniform() * (std::log(hi) - std::log(lo)));
  }
  template <typename T>
  T Pick(const std::vector<T>& choices) {
    return choices[Below(static_cast<int64_t>(choices.size()))];
  }
  double Normal() {  // Box-Muller
    const double u = 1.0 - Uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * kPi * Uniform());
  }

  std::vector<float> Logits(int64_t vocab);
  SamplerConfig Config(int64_t vocab);
  std::vector<int32_t> Context(int64_t vocab);
  std::vector<bool> Mask(int64_t vocab);  // empty: no mask
  // logit_bias, presence and frequency penalties and output_start (half the cases: no bias).
  void OpenAiSteps(int64_t vocab, SamplerConfig* c);

 private:
  std::mt19937_64 engine_;
};

std::vector<float> CaseGenerator::Logits(int64_t vocab) {
  std::vector<float> l(vocab);
  const int kind = static_cast<int>(Below(7));
  const double scale = Pick<double>({0.01, 1, 5, 30});
  const float equal = Pick<float>({0.0f, 1.0f, -3.5f, 1e30f, -1e30f});
  for (int64_t i = 0; i < vocab; ++i) {
    switch (kind) {
      case 0:  // a plain model
        l[i] = static_cast<float>(scale * Normal());
        break;
      case 1:  // +-1e30 among ordinary values
        l[i] = Pick<float>({1e30f, -1e30f, 0.0f, static_cast<float>(Normal())});
        break;
      case 2:  // all equal
        l[i] = equal;
        break;
      case 3:  // few values: ties everywhere
        l[i] = static_cast<float>(Below(7) - 3);
        break;
      case 4:  // near ties: one ulp apart
        l[i] = std::nextafter(2.0f, Below(2) ? 3.0f : 1.0f) + (Below(4) == 0 ? 1e-7f : 0.0f);
        break;
      case 5:  // magnitudes from 1e-30 to 1e30, either sign
        l[i] = static_cast<float>((Below(2) ? 1 : -1) * LogUniform(1e-30, 1e30));
        break;
      default:  // a broken model: NaN and infinities among ordinary values
        l[i] = Below(5) == 0 ? Pick<float>({std::nanf(""), kInf, -kInf})
                             : static_cast<float>(scale * Normal());
        break;
    }
  }
  return l;
}

SamplerConfig CaseGenerator::Config(int64_t vocab) {
  SamplerConfig c;
  c.temperature = static_cast<float>(Pick<double>(
      {0, 1e-30, 1e-10, 1e-3, 0.5, 0.8, 1, 1, 2, 1e3, 1e10, 1e30, LogUniform(1e-30, 1e30)}));
  c.top_k = static_cast<int32_t>(Pick<int64_t>(
      {0, 0, 1, 2, std::max<int64_t>(vocab - 1, 0), vocab, vocab + 1, 1 + Below(vocab)}));
  c.top_p =
      static_cast<float>(Pick<double>({1, 1, 1e-30, 1e-7, 0.1, 0.5, 0.9, 0.95,
                                       std::nextafter(1.0f, 0.0f), std::max(Uniform(), 1e-9)}));
  c.min_p = static_cast<float>(
      Pick<double>({0, 0, 1e-6, 0.01, 0.05, 0.5, 0.99, std::nextafter(1.0f, 0.0f), Uniform()}));
  c.repetition_penalty = static_cast<float>(
      Pick<double>({1, 1, 1e-38, 1e-20, 0.5, 1.1, 1.3, 2, 1e20, 1e38, LogUniform(1e-38, 1e38)}));
  c.penalty_window = static_cast<int32_t>(Pick<int64_t>({0, 1, 3, 64, 1000}));
  c.seed = engine_();
  OpenAiSteps(vocab, &c);
  return c;
}

void CaseGenerator::OpenAiSteps(int64_t vocab, SamplerConfig* c) {
  const std::vector<double> penalties = {0, 0, 0, -2, 2, 0.5, -0.7, 1e-6, Uniform() * 4 - 2};
  c->presence_penalty = static_cast<float>(Pick(penalties));
  c->frequency_penalty = static_cast<float>(Pick(penalties));
  c->output_start = Pick<int64_t>({0, 0, 1, 3, Below(2 * vocab + 4), 1 << 30});
  if (Below(2) == 0) return;  // no logit_bias
  // Some ids (beyond the vocabulary too: ignored), biases of every kind: bans, +-100, small.
  for (int64_t id = Below(3); id < vocab + 3; id += 1 + Below(1 + vocab / 3)) {
    const float bias = static_cast<float>(
        Pick<double>({-100, -100, 100, 0, 1, -1, 5, -30, 99.5, Uniform() * 200 - 100}));
    c->logit_bias.push_back({static_cast<int32_t>(id), bias});
  }
}

std::vector<int32_t> CaseGenerator::Context(int64_t vocab) {
  std::vector<int32_t> context(Below(2 * vocab + 2));
  // Mostly ids of the vocabulary (with repeats), some foreign ones on either side.
  for (int32_t& id : context) id = static_cast<int32_t>(Below(vocab + 4) - 2);
  return context;
}

std::vector<bool> CaseGenerator::Mask(int64_t vocab) {
  if (Below(3) != 0) return {};
  const int kind = static_cast<int>(Below(5));
  const double density = Pick<double>({0.05, 0.3, 0.9});
  const int64_t one = Below(vocab);
  std::vector<bool> allowed(vocab);
  for (int64_t id = 0; id < vocab; ++id) {
    switch (kind) {
      case 0:  // a random subset
        allowed[id] = Uniform() < density;
        break;
      case 1:  // one token (a forced one)
        allowed[id] = id == one;
        break;
      case 2:  // none: a dead end
        allowed[id] = false;
        break;
      case 3:  // all
        allowed[id] = true;
        break;
      default:  // a run of ids
        allowed[id] = id >= one && id < one + 1 + vocab / 4;
        break;
    }
  }
  return allowed;
}

TEST(SamplerReferenceTest, RandomLogitsAndSettingsAgreeWithTheBruteForceReference) {
  CaseGenerator gen(20261201);
  const std::vector<int64_t> vocabs = {1, 2, 3, 4, 5, 7, 8, 13, 31, 64, 97, 256, 257, 1000};
  constexpr int kCases = 6000;
  int failures = 0;
  for (int i = 0; i < kCases && failures < 5; ++i) {
    const int64_t vocab = gen.Pick(vocabs);
    const std::vector<float> logits = gen.Logits(vocab);
    const SamplerConfig config = gen.Config(vocab);
    const std::vector<int32_t> context = gen.Context(vocab);
    const std::vector<bool> allowed = gen.Mask(vocab);
    const std::vector<double> uniforms = {0.0, gen.Uniform(), gen.Uniform(),
                                          std::nextafter(1.0, 0.0)};
    const ::testing::AssertionResult agrees =
        AgreesWithReference(config, logits, context, uniforms, allowed);
    EXPECT_TRUE(agrees) << "case " << i;
    failures += !agrees;
  }
}

// The ids the Sampler keeps.
std::vector<int32_t> KeptIds(const SamplerConfig& config, const std::vector<float>& logits) {
  absl::StatusOr<Sampler> sampler = Sampler::Create(config, logits.size());
  EXPECT_TRUE(sampler.ok()) << sampler.status();
  if (!sampler.ok()) return {};
  SparseDistribution sparse;
  sampler->Distribution(logits, {}, &sparse);
  return sparse.ids;
}

SamplerConfig Settings(float temperature, int32_t top_k, float top_p, float min_p) {
  SamplerConfig c;
  c.temperature = temperature;
  c.top_k = top_k;
  c.top_p = top_p;
  c.min_p = min_p;
  return c;
}

TEST(SamplerReferenceTest, AWeightExactlyAtTheMinPThresholdIsKeptByBoth) {
  const std::vector<float> logits = {0, -1, -2, -3};
  // The weight of id 1 as the rules define it, and min_p set to exactly that float.
  const float w1 = static_cast<float>(std::exp(-1.0));
  const SamplerConfig at = Settings(1, 0, 1, w1);
  const SamplerConfig above = Settings(1, 0, 1, std::nextafter(w1, 1.0f));
  EXPECT_THAT(KeptIds(at, logits), ElementsAre(0, 1));
  EXPECT_THAT(KeptIds(above, logits), ElementsAre(0));
  EXPECT_TRUE(AgreesWithReference(at, logits, {}, {0.0, 0.5, 0.9}));
  EXPECT_TRUE(AgreesWithReference(above, logits, {}, {0.0, 0.5, 0.9}));
}

TEST(SamplerReferenceTest, TopPMassExactlyReachedStopsThereForBoth) {
  const std::vector<float> four(4, 1.5f), eight(8, -2.0f);
  struct Case {
    SamplerConfig config;
    const std::vector<float>* logits;
    std::vector<int32_t> kept;
  };
  const std::vector<Case> cases = {
      {Settings(1, 0, 0.5f, 0), &four, {0, 1}},  // 2 of 4 equal weights are exactly half
      {Settings(1, 0, std::nextafter(0.5f, 1.0f), 0), &four, {0, 1, 2}},
      {Settings(1, 0, 0.25f, 0), &eight, {0, 1}},
      {Settings(1, 0, 0.75f, 0), &eight, {0, 1, 2, 3, 4, 5}},
      {Settings(1, 2, 0.5f, 0), &four, {0}},  // top-p measures the top-k survivors' mass
      {Settings(1e30f, 0, 0.5f, 0), &four, {0, 1}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(KeptIds(c.config, *c.logits), c.kept) << "top_p " << c.config.top_p;
    EXPECT_TRUE(AgreesWithReference(c.config, *c.logits, {}, {0.0, 0.4, 0.8}));
  }
}

TEST(SamplerReferenceTest, TheIssuesCasesAgreeWithTheReference) {
  std::vector<float> logits;
  for (double w : {.01, .3, 1.0, .2, .5, .001, .4, .1}) {
    logits.push_back(static_cast<float>(std::log(w)));
  }
  EXPECT_THAT(KeptIds(Settings(1, 0, 1, 0.05f), logits), ElementsAre(1, 2, 3, 4, 6, 7));
  EXPECT_TRUE(AgreesWithReference(Settings(1, 0, 1, 0.05f), logits, {}, {0.0, 0.5}));
  EXPECT_TRUE(AgreesWithReference(Settings(0.8f, 0, 1, 0.05f), logits, {}, {0.0, 0.5}));
  SamplerConfig penalty = Settings(0.8f, 0, 1, 0);
  penalty.repetition_penalty = 1e-38f;
  const std::vector<float> positive = {5, 4, 3.5f, -1, 0};
  EXPECT_TRUE(AgreesWithReference(penalty, positive, {0, 1, 2, 3}, {0.0, 0.5, 0.99}));
}

}  // namespace
}  // namespace tandem
