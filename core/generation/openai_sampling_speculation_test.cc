// logit_bias and OpenAI's presence and frequency penalties under speculation (issue #30):
// greedy output with them equals the target alone with them, token for token, whatever the
// drafter (a draft model, sequential or pipelined; the n-gram drafter through the round
// driver, as the coordinator runs it), and it differs from the output without them, so the
// steps are really applied. (The sampled case, chi-square, is in speculative_session_test.)
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_matchers.h"
#include "core/decoder/decoder.h"
#include "core/generation/draft_length_policy.h"
#include "core/generation/generation_test_util.h"
#include "core/generation/in_process_backends.h"
#include "core/generation/ngram_draft_backend.h"
#include "core/generation/prediction_drafter.h"
#include "core/generation/prediction_length_policy.h"
#include "core/generation/round_driver.h"
#include "core/generation/session.h"
#include "core/generation/speculative_session.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::kEos;
using ::tandem::testing::kTargetPath;
using ::tandem::testing::SharedModel;

constexpr int64_t kContextSize = 256;
constexpr int64_t kTokens = 64;

const char* const kDistilled = "models/stories260K/derived/stories-draft-distilled.gguf";
const char* const kFirst4Layers = "models/stories260K/derived/stories260K-first4layers.gguf";

// Greedy, with a bias that bans the plain greedy output's first token and favours its fourth,
// and penalties that discourage repeating what was generated.
SamplerConfig Steered(const std::vector<int32_t>& plain) {
  SamplerConfig c;
  c.temperature = 0;
  const int32_t banned = plain[0], favoured = plain[3];
  c.logit_bias = {{banned, -100.0f}};
  if (favoured != banned) {
    c.logit_bias.push_back({favoured, 1.5f});
    if (favoured < banned) std::swap(c.logit_bias[0], c.logit_bias[1]);
  }
  c.presence_penalty = 0.7f;
  c.frequency_penalty = 0.4f;
  return c;
}

class OpenAiSamplingSpeculationTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK_AND_ASSIGN(target_, SharedModel(kTargetPath)); }

  std::vector<int32_t> Alone(const SamplerConfig& config, const std::vector<int32_t>& prompt) {
    SessionOptions options;
    options.sampler = config;
    options.context_size = kContextSize;
    options.stop_ids = {kEos};
    std::vector<int32_t> tokens;
    absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(*target_, pool_, options);
    EXPECT_OK(session.status());
    if (!session.ok()) return tokens;
    EXPECT_OK((*session)
                  ->Generate(prompt, kTokens,
                             [&](int32_t t) {
                               tokens.push_back(t);
                               return true;
                             })
                  .status());
    return tokens;
  }

  std::vector<int32_t> WithDraft(const char* path, int32_t k, bool pipelined,
                                 const SamplerConfig& config, const std::vector<int32_t>& prompt,
                                 GenerationResult* result) {
    std::vector<int32_t> tokens;
    absl::StatusOr<const Model*> draft = SharedModel(path);
    EXPECT_OK(draft.status());
    if (!draft.ok()) return tokens;
    SpeculativeOptions options;
    options.session.sampler = config;
    options.session.context_size = kContextSize;
    options.session.stop_ids = {kEos};
    options.draft_tokens = k;
    options.pipelined = pipelined;
    absl::StatusOr<std::unique_ptr<SpeculativeSession>> session =
        SpeculativeSession::Create(*target_, **draft, pool_, options);
    EXPECT_OK(session.status());
    if (!session.ok()) return tokens;
    absl::StatusOr<GenerationResult> r = (*session)->Generate(prompt, kTokens, [&](int32_t t) {
      tokens.push_back(t);
      return true;
    });
    EXPECT_OK(r.status());
    if (r.ok()) *result = *r;
    return tokens;
  }

  // The n-gram drafter (or, given a prediction, the client's predicted output) through the
  // round driver over the in-process target (the coordinator's loop): their one-hot guesses
  // are verified with the target's sampler steps.
  std::vector<int32_t> WithNgram(int32_t k, const SamplerConfig& config,
                                 const std::vector<int32_t>& prompt, GenerationResult* result,
                                 const std::vector<int32_t>* prediction = nullptr) {
    std::vector<int32_t> tokens;
    Decoder decoder(*target_, pool_);
    ModelState state;
    absl::StatusOr<std::unique_ptr<KvCache>> cache = decoder.NewCache(kContextSize, KvType::kF16);
    EXPECT_OK(cache.status());
    absl::StatusOr<Sampler> sampler = Sampler::Create(config, target_->config().vocab_size);
    EXPECT_OK(sampler.status());
    if (!cache.ok() || !sampler.ok()) return tokens;
    state.cache = std::move(*cache);
    sampler->set_output_start(static_cast<int64_t>(prompt.size()));
    VerifyScratch scratch;
    InProcessTarget target(decoder, state, *sampler, config.seed, &scratch);
    NgramDraft ngram;
    FixedDraftLength policy(k);
    RoundDriverOptions options;
    std::optional<PredictionDrafter> predicted;
    PredictionLengthPolicy prediction_policy;
    if (prediction != nullptr) {
      options.prediction = &predicted.emplace(*prediction, static_cast<int64_t>(prompt.size()));
      options.prediction_policy = &prediction_policy;
    }
    RoundDriver driver(target, prediction != nullptr ? nullptr : &ngram, nullptr, policy, options);
    const std::vector<int32_t> stop_ids = {kEos};
    RoundLimits limits;
    limits.stop_ids = stop_ids;
    limits.max_tokens = kTokens;
    limits.context_size = kContextSize;
    std::vector<int32_t> sequence = prompt;
    absl::StatusOr<GenerationResult> r =
        driver.Generate(sequence, limits, [&](std::vector<int32_t>& round) {
          tokens.insert(tokens.end(), round.begin(), round.end());
          return true;
        });
    EXPECT_OK(r.status());
    if (r.ok()) *result = *r;
    return tokens;
  }

  const Model* target_ = nullptr;
  ThreadPool pool_{1};
};

TEST_F(OpenAiSamplingSpeculationTest, GreedyOutputIsTheTargetAlonesWithTheSameSteps) {
  ASSERT_OK_AND_ASSIGN(std::vector<testing::GoldenCase> cases, testing::StoriesGoldenCases());
  ASSERT_GE(cases.size(), 3u);
  int64_t drafted = 0, ngram_drafted = 0;
  for (size_t c = 0; c < 3; ++c) {
    const std::vector<int32_t>& prompt = cases[c].prompt_ids;
    SamplerConfig plain;
    plain.temperature = 0;
    const std::vector<int32_t> unsteered = Alone(plain, prompt);
    ASSERT_GE(unsteered.size(), 4u);
    const SamplerConfig steered = Steered(unsteered);
    const std::vector<int32_t> expected = Alone(steered, prompt);
    ASSERT_FALSE(expected.empty());
    EXPECT_NE(expected, unsteered) << "the steps changed nothing";
    EXPECT_NE(expected[0], unsteered[0]) << "the banned token was emitted";
    for (const char* draft : {kDistilled, kFirst4Layers}) {
      for (int32_t k : {1, 4, 8}) {
        for (bool pipelined : {false, true}) {
          SCOPED_TRACE(absl::StrCat("case ", c, " ", draft, " k=", k, " pipelined ", pipelined));
          GenerationResult r;
          EXPECT_EQ(WithDraft(draft, k, pipelined, steered, prompt, &r), expected);
          drafted += r.speculation.drafted;
        }
      }
    }
    for (int32_t k : {2, 8}) {
      SCOPED_TRACE(absl::StrCat("case ", c, " n-gram k=", k));
      GenerationResult r;
      EXPECT_EQ(WithNgram(k, steered, prompt, &r), expected);
      ngram_drafted += r.speculation.drafted;
    }
  }
  EXPECT_GT(drafted, 0);
  EXPECT_GT(ngram_drafted, 0) << "the n-gram drafter never guessed: its path went untested";
}

// Predicted Outputs: the prediction's guesses are verified with the same steps, whether the
// prediction is the output itself or the output without the steps (wrong in places).
TEST_F(OpenAiSamplingSpeculationTest, PredictedGuessesAreVerifiedWithTheSameSteps) {
  ASSERT_OK_AND_ASSIGN(std::vector<testing::GoldenCase> cases, testing::StoriesGoldenCases());
  const std::vector<int32_t>& prompt = cases[0].prompt_ids;
  SamplerConfig plain;
  plain.temperature = 0;
  const std::vector<int32_t> unsteered = Alone(plain, prompt);
  ASSERT_GE(unsteered.size(), 4u);
  const SamplerConfig steered = Steered(unsteered);
  const std::vector<int32_t> expected = Alone(steered, prompt);
  for (const std::vector<int32_t>* prediction : {&expected, &unsteered}) {
    GenerationResult r;
    EXPECT_EQ(WithNgram(4, steered, prompt, &r, prediction), expected)
        << (prediction == &expected ? "the output" : "the unsteered output");
    EXPECT_GT(r.speculation.predicted, 0) << "no predicted guess was tested";
  }
}

// The penalties count the generated tokens only: a prompt made of the tokens the target would
// generate changes nothing about the first token (the repetition penalty, over the window,
// would).
TEST_F(OpenAiSamplingSpeculationTest, ThePromptDoesNotCountForThePenalties) {
  ASSERT_OK_AND_ASSIGN(std::vector<testing::GoldenCase> cases, testing::StoriesGoldenCases());
  const std::vector<int32_t>& prompt = cases[0].prompt_ids;
  SamplerConfig plain;
  plain.temperature = 0;
  SamplerConfig penalised = plain;
  penalised.presence_penalty = 2;
  penalised.frequency_penalty = 2;
  const std::vector<int32_t> a = Alone(plain, prompt), b = Alone(penalised, prompt);
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  EXPECT_EQ(a[0], b[0]);
  GenerationResult r;
  EXPECT_EQ(WithDraft(kDistilled, 4, false, penalised, prompt, &r), b);
}

}  // namespace
}  // namespace tandem
