#include "core/generation/speculative_session.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_matchers.h"
#include "core/decoder/decoder.h"
#include "core/generation/chi_square.h"
#include "core/generation/generation_test_util.h"
#include "core/generation/session.h"
#include "core/kernels/matmul.h"
#include "core/model/gguf_builder_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::ChiSquareResult;
using ::tandem::testing::ChiSquareTest;
using ::tandem::testing::kEos;
using ::tandem::testing::kTargetPath;
using ::tandem::testing::Outcome;
using ::tandem::testing::SharedModel;
using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const char* const kDrafts[] = {
    "models/stories260K/derived/stories260K-Q8_0.gguf",
    "models/stories260K/derived/stories260K-Q4_0.gguf",
    "models/stories260K/derived/stories260K-first4layers.gguf",
    "models/stories260K/derived/stories-draft-distilled.gguf",
};

SpeculativeOptions Options(const SamplerConfig& sampler, int32_t k, int64_t context_size = 256) {
  SpeculativeOptions options;
  options.session.sampler = sampler;
  options.session.context_size = context_size;
  options.session.stop_ids = {kEos};
  options.draft_tokens = k;
  return options;
}

SamplerConfig GreedyConfig() {
  SamplerConfig c;
  c.temperature = 0.0f;
  return c;
}

class SpeculativeSessionTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK_AND_ASSIGN(target_, SharedModel(kTargetPath)); }

  std::unique_ptr<SpeculativeSession> NewSession(const Model& draft,
                                                 const SpeculativeOptions& options) {
    auto session = SpeculativeSession::Create(*target_, draft, pool_, options);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? std::move(*session) : nullptr;
  }

  // Generates `max_tokens` after `context`, returning the reported tokens.
  std::vector<int32_t> Generate(SpeculativeSession& session, const std::vector<int32_t>& context,
                                int64_t max_tokens, GenerationResult* result = nullptr) {
    std::vector<int32_t> tokens;
    absl::StatusOr<GenerationResult> r = session.Generate(context, max_tokens, [&](int32_t t) {
      tokens.push_back(t);
      return true;
    });
    EXPECT_TRUE(r.ok()) << r.status();
    if (result != nullptr && r.ok()) *result = *r;
    return tokens;
  }

  const Model* target_ = nullptr;
  ThreadPool pool_{1};
};

// --- Greedy: exactly the target's output ---------------------------------------------------

struct GreedyCase {
  const char* draft;
  int32_t k;
  ActivationPrecision draft_activations = ActivationPrecision::kInt16;
};

class GreedySpeculationTest : public SpeculativeSessionTest,
                              public ::testing::WithParamInterface<GreedyCase> {};

TEST_P(GreedySpeculationTest, EqualsTheTargetAloneAndTheGoldenContinuation) {
  ASSERT_OK_AND_ASSIGN(const Model* draft,
                       SharedModel(GetParam().draft, GetParam().draft_activations));
  ASSERT_OK_AND_ASSIGN(std::vector<testing::GoldenCase> cases, testing::StoriesGoldenCases());
  SessionOptions plain;
  plain.sampler = GreedyConfig();
  plain.context_size = 256;
  plain.stop_ids = {kEos};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> alone, Session::Create(*target_, pool_, plain));
  std::unique_ptr<SpeculativeSession> session =
      NewSession(*draft, Options(GreedyConfig(), GetParam().k));
  SpeculationStats total;
  for (const testing::GoldenCase& c : cases) {
    std::vector<int32_t> expected;
    ASSERT_OK(alone
                  ->Generate(c.prompt_ids, 128,
                             [&](int32_t t) {
                               expected.push_back(t);
                               return true;
                             })
                  .status());
    ASSERT_EQ(expected, c.greedy_ids);
    session->Reset();
    GenerationResult r;
    EXPECT_EQ(Generate(*session, c.prompt_ids, 128, &r), expected);
    EXPECT_EQ(r.stop_reason, StopReason::kMaxTokens);
    EXPECT_EQ(r.speculation.round_tokens, 128);  // every round's tokens were reported
    total.drafted += r.speculation.drafted;
    total.accepted += r.speculation.accepted;
    total.rounds += r.speculation.rounds;
  }
  std::printf("greedy %s (%s) k=%d: acceptance %.3f, %.2f tokens per round\n", GetParam().draft,
              std::string(ActivationPrecisionName(GetParam().draft_activations)).c_str(),
              GetParam().k, static_cast<double>(total.accepted) / total.drafted,
              4.0 * 128 / total.rounds);
}

std::vector<GreedyCase> AllGreedyCases() {
  std::vector<GreedyCase> cases;
  for (const char* draft : kDrafts) {
    for (int32_t k : {1, 3, 4, 8}) cases.push_back({draft, k});
  }
  // --- #31 activations-invariance: the quantized drafts in int8 mode ---
  for (const char* draft : {kDrafts[0], kDrafts[1]}) {
    for (int32_t k : {1, 4, 8}) cases.push_back({draft, k, ActivationPrecision::kInt8});
  }
  // --- end ---
  return cases;
}

INSTANTIATE_TEST_SUITE_P(DraftsAndK, GreedySpeculationTest, ::testing::ValuesIn(AllGreedyCases()),
                         [](const ::testing::TestParamInfo<GreedyCase>& info) {
                           std::string name = info.param.draft;
                           name = name.substr(name.rfind('/') + 1);
                           name =
                               name.substr(0, name.find('.')) + "_k" +
                               std::to_string(info.param.k) + "_" +
                               std::string(ActivationPrecisionName(info.param.draft_activations));
                           for (char& ch : name) {
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

// With adaptive k the cost model chooses k from the measured timings (which vary from run to
// run); whatever it chooses, greedy output is the target's, and the statistics say what it
// chose and from what.
TEST_F(SpeculativeSessionTest, AdaptiveKStaysExactAndReportsTheCostModel) {
  ASSERT_OK_AND_ASSIGN(std::vector<testing::GoldenCase> cases, testing::StoriesGoldenCases());
  for (const char* path : {kDrafts[0], kDrafts[2], kDrafts[3]}) {
    SCOPED_TRACE(path);
    ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(path));
    SpeculativeOptions options = Options(GreedyConfig(), 2);
    options.adaptive = true;
    options.max_draft_tokens = 6;
    std::unique_ptr<SpeculativeSession> session = NewSession(*draft, options);
    GenerationResult r;
    EXPECT_EQ(Generate(*session, cases[1].prompt_ids, 128, &r), cases[1].greedy_ids);
    // The session keeps its model (and its k) for the next call.
    EXPECT_EQ(Generate(*session, cases[2].prompt_ids, 128), cases[2].greedy_ids);
    const SpeculationStats& s = r.speculation;
    ASSERT_FALSE(s.drafted_per_position.empty());
    // The second round ran the target alone (to measure it): fewer rounds guessed than ran.
    EXPECT_LT(s.drafted_per_position[0], s.rounds);
    ASSERT_TRUE(s.cost_model.has_value());
    EXPECT_GT(s.cost_model->alone_token_seconds, 0);
    EXPECT_GT(s.cost_model->draft_token_seconds, 0);
    EXPECT_FALSE(s.cost_model->acceptance.empty());
    EXPECT_GT(s.cost_model->predicted_tokens_per_second, 0);
    EXPECT_GE(s.final_draft_tokens, 0);
    EXPECT_LE(s.final_draft_tokens, 6);
    EXPECT_EQ(s.cost_model->chosen_k, s.final_draft_tokens);
    // Rounds without guesses continued alone: the rounds gave more tokens than one each
    // beyond the kept guesses.
    EXPECT_LT(s.rounds + s.accepted, static_cast<int64_t>(cases[1].greedy_ids.size()));
  }
}

// --- Sampling: the target's distribution (lossless) -----------------------------------------

// The exact distribution of the target's first `depth` tokens after `prompt`, for every
// outcome that `draws` draws expect at least 5 times (the rest is pooled by the test).
class TargetDistribution {
 public:
  TargetDistribution(const Model& model, ThreadPool& pool, const SamplerConfig& config)
      : decoder_(model, pool), sampler_(*Sampler::Create(config, model.config().vocab_size)) {}

  std::map<Outcome, double> Enumerate(const std::vector<int32_t>& prompt, int depth,
                                      int64_t draws) {
    std::map<Outcome, double> out;
    std::vector<int32_t> tokens = prompt;
    sampler_.set_output_start(static_cast<int64_t>(prompt.size()));  // the OpenAI penalties
    Expand(tokens, prompt.size(), depth, 1.0, draws, out);
    return out;
  }

 private:
  void Expand(std::vector<int32_t>& tokens, size_t prompt_size, int depth, double probability,
              int64_t draws, std::map<Outcome, double>& out) {
    if (depth == 0) {
      out[Outcome(tokens.begin() + prompt_size, tokens.end())] = probability;
      return;
    }
    auto cache = decoder_.NewCache(64, KvType::kF16);
    ASSERT_TRUE(cache.ok());
    auto logits = decoder_.Forward(**cache, tokens, 0, LogitsMode::kLast);
    ASSERT_TRUE(logits.ok()) << logits.status();
    std::vector<float> p(logits->size());
    sampler_.Distribution(*logits, tokens, absl::MakeSpan(p));
    for (size_t id = 0; id < p.size(); ++id) {
      if (probability * p[id] * draws < 5) continue;
      tokens.push_back(static_cast<int32_t>(id));
      Expand(tokens, prompt_size, depth - 1, probability * p[id], draws, out);
      tokens.pop_back();
    }
  }

  Decoder decoder_;
  Sampler sampler_;
};

struct LosslessCase {
  std::string name;
  const char* draft;
  SamplerConfig config;
};

SamplerConfig PlainT1() {
  SamplerConfig t1;
  t1.temperature = 1.0f;
  return t1;
}

// The weak early-exit draft (many rejections, residual draws) and the distilled one, each at
// T = 1 or with the filters on.
std::vector<LosslessCase> LosslessCases() {
  SamplerConfig filtered = PlainT1();
  filtered.top_k = 20;
  filtered.top_p = 0.9f;
  SamplerConfig everything = filtered;
  everything.temperature = 0.8f;
  everything.min_p = 0.05f;
  everything.repetition_penalty = 1.3f;
  everything.penalty_window = 8;
  // Gumbel coupling (gumbel_coupling.h) must be as lossless as the standard rule.
  SamplerConfig gumbel_t1 = PlainT1();
  gumbel_t1.coupling = Coupling::kGumbel;
  SamplerConfig gumbel_everything = everything;
  gumbel_everything.coupling = Coupling::kGumbel;
  return {{"first4layers T=1", kDrafts[2], PlainT1()},
          {"first4layers T=1 top-k 20 top-p 0.9", kDrafts[2], filtered},
          {"distilled T=1 top-k 20 top-p 0.9", kDrafts[3], filtered},
          {"distilled T=0.8 top-k top-p min-p penalty", kDrafts[3], everything},
          {"gumbel first4layers T=1", kDrafts[2], gumbel_t1},
          {"gumbel distilled T=0.8 top-k top-p min-p penalty", kDrafts[3], gumbel_everything}};
}

// "The little dog was sad because": the continuation is genuinely uncertain.
const std::vector<int32_t> kOpenPrompt = {1,   291, 376, 400, 428, 286, 296,
                                          418, 329, 429, 412, 425, 372};
constexpr int kDepth = 3;
constexpr int64_t kSeeds = 3000;

TEST_F(SpeculativeSessionTest, FirstTokensAreDistributedAsTheTargetsOwn) {
  for (const LosslessCase& c : LosslessCases()) {
    SCOPED_TRACE(c.name);
    ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(c.draft));
    TargetDistribution target(*target_, pool_, c.config);
    const std::map<Outcome, double> expected = target.Enumerate(kOpenPrompt, kDepth, kSeeds);
    std::map<Outcome, int64_t> observed;
    SpeculationStats stats;
    SpeculativeOptions options = Options(c.config, 2, 32);
    options.session.stop_ids = {};
    // One session for every seed: the prompt is reused from the cache (which changes
    // nothing, see SecondTurnRunsOnlyTheNewTokensAndMatchesAFreshSession).
    std::unique_ptr<SpeculativeSession> session = NewSession(*draft, options);
    for (int64_t seed = 0; seed < kSeeds; ++seed) {
      session->set_seed(seed);
      GenerationResult r;
      ++observed[Generate(*session, kOpenPrompt, kDepth, &r)];
      stats.drafted += r.speculation.drafted;
      stats.accepted += r.speculation.accepted;
    }
    const ChiSquareResult result = ChiSquareTest(observed, expected, kSeeds);
    EXPECT_FALSE(result.rejected()) << result.ToString();
    std::printf("%s: %s; acceptance %.3f\n", c.name.c_str(), result.ToString().c_str(),
                stats.acceptance_rate());
  }
}

// Pipelined rounds (round_driver.h) draw with the same rule: four tokens with k = 1 give the
// second round guesses drafted during the first's verify whenever the draft foresaw it.
TEST_F(SpeculativeSessionTest, PipelinedTokensAreDistributedAsTheTargetsOwn) {
  constexpr int kPipelinedDepth = 4;
  for (const LosslessCase& c : LosslessCases()) {
    if (c.draft != kDrafts[3]) continue;  // the distilled draft: most rounds pre-drafted
    SCOPED_TRACE(c.name);
    ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(c.draft));
    TargetDistribution target(*target_, pool_, c.config);
    const std::map<Outcome, double> expected =
        target.Enumerate(kOpenPrompt, kPipelinedDepth, kSeeds);
    std::map<Outcome, int64_t> observed;
    SpeculativeOptions options = Options(c.config, 1, 32);
    options.session.stop_ids = {};
    options.pipelined = true;
    std::unique_ptr<SpeculativeSession> session = NewSession(*draft, options);
    int64_t predrafted = 0;
    for (int64_t seed = 0; seed < kSeeds; ++seed) {
      session->set_seed(seed);
      GenerationResult r;
      ++observed[Generate(*session, kOpenPrompt, kPipelinedDepth, &r)];
      predrafted += r.speculation.predrafted_rounds;
    }
    const ChiSquareResult result = ChiSquareTest(observed, expected, kSeeds);
    EXPECT_FALSE(result.rejected()) << result.ToString();
    EXPECT_GT(predrafted, kSeeds / 10);
    std::printf("pipelined %s: %s; %lld pre-drafted rounds in %lld calls\n", c.name.c_str(),
                result.ToString().c_str(), static_cast<long long>(predrafted),
                static_cast<long long>(kSeeds));
  }
}

// For a fixed k a pipelined round's guesses are those a draft call would return, so the
// output is the sequential one: greedy the target's, and seeded sampling the same tokens.
TEST_F(SpeculativeSessionTest, PipelinedOutputIsTheSequentialOutput) {
  ASSERT_OK_AND_ASSIGN(std::vector<testing::GoldenCase> cases, testing::StoriesGoldenCases());
  ASSERT_FALSE(cases.empty());
  SamplerConfig sampled = PlainT1();
  sampled.top_p = 0.9f;
  sampled.seed = 11;
  for (const char* path : {kDrafts[0], kDrafts[3]}) {
    ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(path));
    for (int32_t k : {1, 4, 8}) {
      SCOPED_TRACE(absl::StrCat(path, " k=", k));
      std::unique_ptr<SpeculativeSession> sequential =
          NewSession(*draft, Options(GreedyConfig(), k));
      SpeculativeOptions options = Options(GreedyConfig(), k);
      options.pipelined = true;
      std::unique_ptr<SpeculativeSession> pipelined = NewSession(*draft, options);
      GenerationResult r;
      EXPECT_EQ(Generate(*pipelined, cases[0].prompt_ids, 128, &r), cases[0].greedy_ids);
      EXPECT_TRUE(r.speculation.pipelined);
      EXPECT_GT(r.speculation.predrafted_rounds, 0);
      sequential = NewSession(*draft, Options(sampled, k));
      options.session.sampler = sampled;
      pipelined = NewSession(*draft, options);
      const std::vector<int32_t> expected = Generate(*sequential, cases[0].prompt_ids, 96);
      EXPECT_EQ(Generate(*pipelined, cases[0].prompt_ids, 96, &r), expected);
    }
  }
}

// logit_bias and OpenAI's presence and frequency penalties are sampler steps both models
// apply, each position with its own generated tokens (earlier guesses included): sampled
// output stays distributed as the target's own with the same steps, for either coupling. The
// bias bans the target's greedy first token and favours its second; the negative presence
// penalty makes repeating a generated token likelier, so the counts matter at every depth.
TEST_F(SpeculativeSessionTest, BiasedAndPenalisedTokensAreDistributedAsTheTargetsOwn) {
  SessionOptions greedy;
  greedy.sampler = GreedyConfig();
  greedy.context_size = 32;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> alone, Session::Create(*target_, pool_, greedy));
  std::vector<int32_t> first;
  ASSERT_OK(alone
                ->Generate(kOpenPrompt, 2,
                           [&](int32_t t) {
                             first.push_back(t);
                             return true;
                           })
                .status());
  ASSERT_EQ(first.size(), 2u);
  SamplerConfig biased = PlainT1();
  biased.logit_bias = {{std::min(first[0], first[1]), first[0] < first[1] ? -100.0f : 2.0f},
                       {std::max(first[0], first[1]), first[0] < first[1] ? 2.0f : -100.0f}};
  if (first[0] == first[1]) biased.logit_bias = {{first[0], -100.0f}};
  biased.presence_penalty = -1.5f;
  biased.frequency_penalty = 0.5f;
  SamplerConfig gumbel = biased;
  gumbel.coupling = Coupling::kGumbel;
  gumbel.top_k = 20;
  for (const LosslessCase& c : std::vector<LosslessCase>{
           {"first4layers T=1 logit_bias penalties", kDrafts[2], biased},
           {"gumbel distilled T=1 top-k logit_bias penalties", kDrafts[3], gumbel}}) {
    SCOPED_TRACE(c.name);
    ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(c.draft));
    TargetDistribution target(*target_, pool_, c.config);
    const std::map<Outcome, double> expected = target.Enumerate(kOpenPrompt, kDepth, kSeeds);
    std::map<Outcome, int64_t> observed;
    SpeculativeOptions options = Options(c.config, 2, 32);
    options.session.stop_ids = {};
    std::unique_ptr<SpeculativeSession> session = NewSession(*draft, options);
    SpeculationStats stats;
    for (int64_t seed = 0; seed < kSeeds; ++seed) {
      session->set_seed(seed);
      GenerationResult r;
      const Outcome tokens = Generate(*session, kOpenPrompt, kDepth, &r);
      EXPECT_NE(tokens[0], first[0]) << "the banned token was drawn";
      ++observed[tokens];
      stats.drafted += r.speculation.drafted;
      stats.accepted += r.speculation.accepted;
    }
    const ChiSquareResult result = ChiSquareTest(observed, expected, kSeeds);
    EXPECT_FALSE(result.rejected()) << result.ToString();
    std::printf("%s: %s; acceptance %.3f\n", c.name.c_str(), result.ToString().c_str(),
                stats.acceptance_rate());
  }
}

TEST_F(SpeculativeSessionTest, ChiSquareDetectsTheDraftsOwnDistribution) {
  // The statistical test has power: sampling from the draft alone fails it.
  ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(kDrafts[2]));
  const SamplerConfig config = PlainT1();
  TargetDistribution target(*target_, pool_, config);
  const std::map<Outcome, double> expected = target.Enumerate(kOpenPrompt, kDepth, kSeeds);
  std::map<Outcome, int64_t> observed;
  SessionOptions options;
  options.sampler = config;
  options.context_size = 32;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> alone, Session::Create(*draft, pool_, options));
  for (int64_t seed = 0; seed < kSeeds; ++seed) {
    alone->set_seed(seed);
    Outcome tokens;
    ASSERT_OK(alone
                  ->Generate(kOpenPrompt, kDepth,
                             [&](int32_t t) {
                               tokens.push_back(t);
                               return true;
                             })
                  .status());
    ++observed[tokens];
  }
  EXPECT_TRUE(ChiSquareTest(observed, expected, kSeeds).rejected());
}

// --- Sessions: prefix reuse, stop rules, errors, stats ---------------------------------------

SamplerConfig SampledConfig(uint64_t seed) {
  SamplerConfig c;
  c.temperature = 0.8f;
  c.top_k = 40;
  c.top_p = 0.95f;
  c.repetition_penalty = 1.2f;
  c.penalty_window = 16;
  c.seed = seed;
  return c;
}

TEST_F(SpeculativeSessionTest, SecondTurnRunsOnlyTheNewTokensAndMatchesAFreshSession) {
  ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(kDrafts[3]));
  for (const SamplerConfig& config : {GreedyConfig(), SampledConfig(11)}) {
    std::unique_ptr<SpeculativeSession> session = NewSession(*draft, Options(config, 4));
    const std::vector<int32_t> turn1 = {1, 403, 407, 261, 378};
    GenerationResult r1;
    const std::vector<int32_t> reply1 = Generate(*session, turn1, 6, &r1);
    EXPECT_EQ(r1.stats.prompt_tokens, 5);
    EXPECT_EQ(r1.stats.reused_tokens, 0);
    ASSERT_EQ(reply1.size(), 6u);

    std::vector<int32_t> turn2 = turn1;
    turn2.insert(turn2.end(), reply1.begin(), reply1.end());
    turn2.insert(turn2.end(), {13, 267});
    GenerationResult r2;
    const std::vector<int32_t> reply2 = Generate(*session, turn2, 10, &r2);
    EXPECT_EQ(r2.stats.reused_tokens, 5 + 6 - 1);
    EXPECT_EQ(r2.stats.prompt_tokens, 1 + 2);
    std::unique_ptr<SpeculativeSession> fresh = NewSession(*draft, Options(config, 4));
    EXPECT_EQ(reply2, Generate(*fresh, turn2, 10));
  }
}

TEST_F(SpeculativeSessionTest, SampledOutputDependsOnlyOnTheSeed) {
  ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(kDrafts[3]));
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  std::unique_ptr<SpeculativeSession> a = NewSession(*draft, Options(SampledConfig(5), 4));
  std::unique_ptr<SpeculativeSession> b = NewSession(*draft, Options(SampledConfig(5), 4));
  std::unique_ptr<SpeculativeSession> c = NewSession(*draft, Options(SampledConfig(6), 4));
  ThreadPool two(2);
  auto other_pool = SpeculativeSession::Create(*target_, *draft, two, Options(SampledConfig(5), 4));
  ASSERT_OK(other_pool.status());
  const std::vector<int32_t> tokens = Generate(*a, prompt, 40);
  EXPECT_EQ(Generate(*b, prompt, 40), tokens);
  EXPECT_EQ(Generate(**other_pool, prompt, 40), tokens);
  EXPECT_NE(Generate(*c, prompt, 40), tokens);
}

struct StopCase {
  std::string name;
  std::vector<int32_t> stop_ids;
  int32_t callback_stops_after;  // -1: never
  int64_t max_tokens;
  int64_t context_size;
};

// Every stop rule ends the call at the same token, for the same reason, as a plain Session.
TEST_F(SpeculativeSessionTest, StopRulesMatchThePlainSession) {
  ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(kDrafts[1]));
  const std::vector<StopCase> cases = {
      {"stop id", {261}, -1, 10, 64},
      {"stop id first", {403}, -1, 10, 64},
      {"stop id before callback", {261}, 261, 10, 64},
      {"callback", {}, 407, 10, 64},
      {"callback before limit", {}, 407, 2, 64},
      {"limit", {}, -1, 3, 64},
      {"limit before full cache", {}, -1, 4, 4},
      {"full cache", {}, -1, 10, 4},
      {"one-token cache", {}, -1, 10, 1},
      {"full cache mid-round", {}, -1, 50, 11},
  };
  for (int32_t k : {1, 4, 8}) {
    for (const StopCase& c : cases) {
      SCOPED_TRACE(c.name + " k " + std::to_string(k));
      SessionOptions plain;
      plain.sampler = GreedyConfig();
      plain.context_size = c.context_size;
      plain.stop_ids = c.stop_ids;
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> alone, Session::Create(*target_, pool_, plain));
      SpeculativeOptions options = Options(GreedyConfig(), k, c.context_size);
      options.session.stop_ids = c.stop_ids;
      std::unique_ptr<SpeculativeSession> session = NewSession(*draft, options);
      std::vector<int32_t> expected, actual;
      const auto callback = [&c](std::vector<int32_t>* out) {
        return [&c, out](int32_t t) {
          out->push_back(t);
          return t != c.callback_stops_after;
        };
      };
      ASSERT_OK_AND_ASSIGN(GenerationResult e,
                           alone->Generate({1}, c.max_tokens, callback(&expected)));
      ASSERT_OK_AND_ASSIGN(GenerationResult a,
                           session->Generate({1}, c.max_tokens, callback(&actual)));
      EXPECT_EQ(actual, expected);
      EXPECT_EQ(a.stop_reason, e.stop_reason) << StopReasonName(a.stop_reason);
      EXPECT_EQ(a.stats.generated_tokens, e.stats.generated_tokens);
    }
  }
}

TEST_F(SpeculativeSessionTest, TheLimitTokenIsReportedButNeverRun) {
  ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(kDrafts[0]));
  std::unique_ptr<SpeculativeSession> session = NewSession(*draft, Options(GreedyConfig(), 4));
  EXPECT_THAT(Generate(*session, {1}, 3), ElementsAre(403, 407, 261));
  EXPECT_THAT(session->target_cached_tokens(), ElementsAre(1, 403, 407));
  GenerationResult r;
  EXPECT_THAT(Generate(*session, {1, 403, 407, 261}, 1, &r), ElementsAre(378));
  EXPECT_EQ(r.stats.reused_tokens, 3);
  EXPECT_EQ(r.stats.prompt_tokens, 1);
}

struct ErrorCase {
  std::string name;
  std::vector<int32_t> context;
  int64_t max_tokens;
  absl::StatusCode code;
  std::string message;
};

TEST_F(SpeculativeSessionTest, GenerateErrorsHaveExactCodesAndLeaveTheSessionUsable) {
  ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(kDrafts[3]));
  const std::vector<ErrorCase> cases = {
      {"empty context", {}, 5, absl::StatusCode::kInvalidArgument, "empty"},
      {"zero limit", {1}, 0, absl::StatusCode::kInvalidArgument, "max_tokens"},
      {"negative limit", {1}, -3, absl::StatusCode::kInvalidArgument, "max_tokens"},
      {"context longer than the cache", std::vector<int32_t>(9, 1), 5,
       absl::StatusCode::kOutOfRange, "9 tokens"},
      {"id outside the vocabulary (the forward pass's error)",
       {1, 512, 3},
       5,
       absl::StatusCode::kInvalidArgument,
       "512"},
      {"id outside the vocabulary as the pending token",
       {1, 512},
       5,
       absl::StatusCode::kInvalidArgument,
       "512"},
  };
  std::unique_ptr<SpeculativeSession> session = NewSession(*draft, Options(GreedyConfig(), 4, 8));
  for (const ErrorCase& c : cases) {
    EXPECT_THAT(session->Generate(c.context, c.max_tokens, [](int32_t) { return true; }),
                StatusIs(c.code, HasSubstr(c.message)))
        << c.name;
    EXPECT_THAT(Generate(*session, {1}, 2), ElementsAre(403, 407)) << c.name;
  }
}

TEST_F(SpeculativeSessionTest, CreateRejectsBadOptions) {
  ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(kDrafts[3]));
  for (const auto& [k, max_k] :
       std::vector<std::pair<int32_t, int32_t>>{{0, 16}, {-1, 16}, {17, 16}, {1, 0}}) {
    SpeculativeOptions options = Options(GreedyConfig(), k);
    options.max_draft_tokens = max_k;
    EXPECT_THAT(SpeculativeSession::Create(*target_, *draft, pool_, options),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("draft_tokens")))
        << k << " " << max_k;
  }
  SpeculativeOptions bad_sampler = Options(GreedyConfig(), 4);
  bad_sampler.session.sampler.min_p = 1.0f;
  EXPECT_THAT(SpeculativeSession::Create(*target_, *draft, pool_, bad_sampler),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("min_p")));
  SpeculativeOptions bad_context = Options(GreedyConfig(), 4, -2);
  EXPECT_THAT(SpeculativeSession::Create(*target_, *draft, pool_, bad_context),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("context_size")));
}

TEST_F(SpeculativeSessionTest, IncompatibleVocabulariesAreAFailedPrecondition) {
  ASSERT_OK_AND_ASSIGN(const Model* other,
                       SharedModel("models/llama-2-tiny-random/llama-2-tiny-random.gguf"));
  EXPECT_THAT(SpeculativeSession::Create(*target_, *other, pool_, Options(GreedyConfig(), 4)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("the target's vocabulary has 512 tokens and the draft's 32000")));
}

TEST_F(SpeculativeSessionTest, StatsCountRoundsGuessesAndPositions) {
  ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(kDrafts[2]));
  std::unique_ptr<SpeculativeSession> session = NewSession(*draft, Options(GreedyConfig(), 4));
  GenerationResult r;
  Generate(*session, {1, 403, 407, 261, 378}, 60, &r);
  const SpeculationStats& s = r.speculation;
  EXPECT_EQ(r.stats.generated_tokens, 60);
  EXPECT_EQ(r.stats.prompt_tokens, 5);
  EXPECT_GT(r.stats.prefill_seconds, 0);
  EXPECT_GT(r.stats.decode_seconds, 0);
  EXPECT_EQ(s.round_tokens, 60);
  EXPECT_EQ(s.round_tokens, s.accepted + s.rounds);
  EXPECT_DOUBLE_EQ(s.acceptance_rate(), static_cast<double>(s.accepted) / s.drafted);
  EXPECT_DOUBLE_EQ(s.tokens_per_round(), 60.0 / s.rounds);
  ASSERT_EQ(s.drafted_per_position.size(), 4u);
  ASSERT_EQ(s.accepted_per_position.size(), 4u);
  int64_t drafted = 0, accepted = 0;
  for (size_t i = 0; i < 4; ++i) {
    drafted += s.drafted_per_position[i];
    accepted += s.accepted_per_position[i];
    EXPECT_LE(s.accepted_per_position[i], s.drafted_per_position[i]);
    // A guess is only kept after every earlier guess of its round was.
    if (i > 0) {
      EXPECT_LE(s.accepted_per_position[i], s.accepted_per_position[i - 1]);
    }
  }
  EXPECT_EQ(drafted, s.drafted);
  EXPECT_EQ(accepted, s.accepted);
  // The last round may have had no room for a guess under the limit.
  EXPECT_LE(s.rounds - s.drafted_per_position[0], 1);
  // first4layers agrees with the target on about half the greedy tokens.
  EXPECT_GT(s.acceptance_rate(), 0.2);
  EXPECT_LT(s.acceptance_rate(), 0.9);
}

// --- A draft whose vocabulary is larger than the target's --------------------------------

// A random-weight draft whose vocabulary is the first `vocab_size` of stories260K's 512 tokens,
// then extra tokens up to `vocab_size`.
absl::StatusOr<std::unique_ptr<Model>> FixtureDraft(const Model& target, int vocab_size) {
  ASSIGN_OR_RETURN(absl::Span<const absl::string_view> texts,
                   target.gguf()->GetStringArray("tokenizer.ggml.tokens"));
  std::vector<std::string> tokens(texts.begin(), texts.begin() + std::min<int>(vocab_size, 512));
  for (int i = 512; i < vocab_size; ++i) tokens.push_back("<extra_" + std::to_string(i) + ">");
  const std::vector<uint8_t> bytes = testing::GgufBuilder()
                                         .AddString("tokenizer.ggml.model", "llama")
                                         .AddStringArray("tokenizer.ggml.tokens", tokens)
                                         .AddUint32("tokenizer.ggml.bos_token_id", 1)
                                         .AddUint32("tokenizer.ggml.eos_token_id", 2)
                                         .Build();
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string vocab_path = std::string(tmp != nullptr ? tmp : "/tmp") + "/tandem-vocab600-" +
                                 std::to_string(::getpid()) + ".gguf";
  std::ofstream(vocab_path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  ASSIGN_OR_RETURN(std::string folder,
                   testing::MakeFixtureModel({"--vocab-from", vocab_path, "--dim", "32", "--layers",
                                              "1", "--ffn", "64", "--seed", "3"}));
  std::remove(vocab_path.c_str());
  return Model::Load(folder + "/model.gguf");
}

// Guesses beyond id 511 must be rejected (never run by the target), and the output stays exact.
TEST_F(SpeculativeSessionTest, GuessesBeyondTheTargetsVocabularyAreRejected) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Model> draft, FixtureDraft(*target_, 600));
  ASSERT_EQ(draft->config().vocab_size, 600);
  ASSERT_OK_AND_ASSIGN(std::vector<testing::GoldenCase> cases, testing::StoriesGoldenCases());
  // Greedy: the target's output, whatever the random draft proposes.
  std::unique_ptr<SpeculativeSession> greedy = NewSession(*draft, Options(GreedyConfig(), 4));
  EXPECT_EQ(Generate(*greedy, cases[0].prompt_ids, 128), cases[0].greedy_ids);
  // Sampled: the draft proposes ids beyond 511 (a random model spreads its mass) and the
  // distribution of the first tokens is still the target's.
  SamplerConfig t1;
  t1.temperature = 1.0f;
  {
    Decoder decoder(*draft, pool_);
    ASSERT_OK_AND_ASSIGN(auto cache, decoder.NewCache(32, KvType::kF16));
    ASSERT_OK_AND_ASSIGN(auto logits, decoder.Forward(*cache, kOpenPrompt, 0, LogitsMode::kLast));
    ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(t1, 600));
    std::vector<float> q(600);
    sampler.Distribution(logits, kOpenPrompt, absl::MakeSpan(q));
    double beyond = 0;
    for (int id = 512; id < 600; ++id) beyond += q[id];
    EXPECT_GT(beyond, 0.05);  // so thousands of rounds meet such guesses
  }
  TargetDistribution target(*target_, pool_, t1);
  constexpr int64_t kDraws = 2000;
  const std::map<Outcome, double> expected = target.Enumerate(kOpenPrompt, 2, kDraws);
  std::map<Outcome, int64_t> observed;
  SpeculativeOptions options = Options(t1, 3, 32);
  options.session.stop_ids = {};
  std::unique_ptr<SpeculativeSession> session = NewSession(*draft, options);
  for (int64_t seed = 0; seed < kDraws; ++seed) {
    session->set_seed(seed);
    ++observed[Generate(*session, kOpenPrompt, 2)];
  }
  const ChiSquareResult result = ChiSquareTest(observed, expected, kDraws);
  EXPECT_FALSE(result.rejected()) << result.ToString();
}

// The target's tokens 420..511 are unknown to a 420-token draft: it runs a stand-in for them.
TEST_F(SpeculativeSessionTest, TargetTokensBeyondTheDraftsVocabularyAreRunAsAStandIn) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Model> draft, FixtureDraft(*target_, 420));
  ASSERT_OK_AND_ASSIGN(std::vector<testing::GoldenCase> cases, testing::StoriesGoldenCases());
  std::unique_ptr<SpeculativeSession> session = NewSession(*draft, Options(GreedyConfig(), 3));
  for (const testing::GoldenCase& c : cases) {
    session->Reset();
    EXPECT_EQ(Generate(*session, c.prompt_ids, 128), c.greedy_ids);
  }
  // "Once upon a time": ids 432, 426, ... are beyond the draft's vocabulary.
  EXPECT_THAT(cases[1].greedy_ids, ::testing::Contains(432));
}

TEST_F(SpeculativeSessionTest, ExtremeSamplerSettingsGenerateValidTokens) {
  ASSERT_OK_AND_ASSIGN(const Model* draft, SharedModel(kDrafts[3]));
  for (const auto& [name, config] : testing::ExtremeSamplerSettings()) {
    SCOPED_TRACE(name);
    std::unique_ptr<SpeculativeSession> session = NewSession(*draft, Options(config, 4));
    ASSERT_NE(session, nullptr);
    GenerationResult result;
    const std::vector<int32_t> tokens = Generate(*session, {1}, 48, &result);
    ASSERT_FALSE(tokens.empty());
    EXPECT_LE(tokens.size(), 48u);
    for (int32_t token : tokens) {
      EXPECT_GE(token, 0);
      EXPECT_LT(token, target_->config().vocab_size);
    }
    EXPECT_EQ(result.stats.generated_tokens, static_cast<int64_t>(tokens.size()));
    EXPECT_GT(result.speculation.rounds, 0);
  }
}

}  // namespace
}  // namespace tandem
