// ContinueAlone (speculative_round.h): a target that draws several tokens in one call gives
// exactly the tokens of one-token rounds — the in-process Session's, which draws each token
// as a verify with no guesses does — greedy and seeded, and stops at the cache's end.
#include <memory>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/decoder/decoder.h"
#include "core/generation/generation_test_util.h"
#include "core/generation/session.h"
#include "core/generation/speculative_round.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::kTargetPath;
using ::tandem::testing::SharedModel;

struct ContinueCase {
  const char* name;
  float temperature;
  float top_p;
  uint64_t seed;
};

class ContinueAloneTest : public ::testing::TestWithParam<ContinueCase> {};

// The first `count` tokens the Session draws after `prompt`.
std::vector<int32_t> SessionTokens(const Model& model, ThreadPool& pool,
                                   const SamplerConfig& config, const std::vector<int32_t>& prompt,
                                   int64_t count) {
  SessionOptions options;
  options.sampler = config;
  options.context_size = 256;
  std::vector<int32_t> tokens;
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(model, pool, options);
  EXPECT_OK(session.status());
  if (!session.ok()) return tokens;
  EXPECT_OK((*session)
                ->Generate(prompt, count,
                           [&](int32_t t) {
                             tokens.push_back(t);
                             return true;
                           })
                .status());
  return tokens;
}

TEST_P(ContinueAloneTest, DrawsTheTokensOfOneTokenRounds) {
  ASSERT_OK_AND_ASSIGN(const Model* model, SharedModel(kTargetPath));
  ThreadPool pool(2);
  SamplerConfig config;
  config.temperature = GetParam().temperature;
  config.top_p = GetParam().top_p;
  config.seed = GetParam().seed;
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 109};
  const std::vector<int32_t> expected = SessionTokens(*model, pool, config, prompt, 24);
  ASSERT_EQ(expected.size(), 24u);

  Decoder decoder(*model, pool);
  ModelState state;
  ASSERT_OK_AND_ASSIGN(state.cache, decoder.NewCache(256, KvType::kF16));
  ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(config, model->config().vocab_size));
  VerifyScratch scratch;
  // A verify with no guesses draws the first token; calls of 1, 5 and 17 more draw the rest.
  std::vector<int32_t> sequence = prompt, got, more;
  std::vector<int32_t> none;
  ASSERT_OK_AND_ASSIGN(AcceptanceResult first, VerifyGuesses(decoder, state, sampler, sequence,
                                                             &none, {}, config.seed, &scratch));
  got.push_back(first.next_token);
  for (int32_t steps : {1, 5, 17}) {
    ASSERT_OK(
        ContinueAlone(decoder, state, sampler, got.back(), steps, config.seed, &scratch, &more));
    ASSERT_EQ(static_cast<int32_t>(more.size()), steps);
    got.insert(got.end(), more.begin(), more.end());
    // Every drawn token but the last is in the cache.
    EXPECT_EQ(state.cached.size(), prompt.size() + got.size() - 1);
  }
  got.resize(expected.size());
  EXPECT_EQ(got, expected);
}

INSTANTIATE_TEST_SUITE_P(Samplers, ContinueAloneTest,
                         ::testing::Values(ContinueCase{"greedy", 0.0f, 1.0f, 0},
                                           ContinueCase{"seeded_top_p", 0.9f, 0.95f, 1234},
                                           ContinueCase{"seeded_hot", 1.5f, 1.0f, 77}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ContinueAloneStopTest, StopsAtTheEndOfTheCache) {
  ASSERT_OK_AND_ASSIGN(const Model* model, SharedModel(kTargetPath));
  ThreadPool pool(1);
  Decoder decoder(*model, pool);
  ModelState state;
  ASSERT_OK_AND_ASSIGN(state.cache, decoder.NewCache(16, KvType::kF16));
  SamplerConfig greedy;
  greedy.temperature = 0.0f;
  ASSERT_OK_AND_ASSIGN(Sampler sampler, Sampler::Create(greedy, model->config().vocab_size));
  VerifyScratch scratch;
  std::vector<int32_t> none, more;
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 109, 5, 6, 7, 8, 9};
  ASSERT_OK_AND_ASSIGN(AcceptanceResult first,
                       VerifyGuesses(decoder, state, sampler, prompt, &none, {}, 0, &scratch));
  // Positions 10..15 can still run: six more tokens, the last drawn for position 16.
  ASSERT_OK(ContinueAlone(decoder, state, sampler, first.next_token, 20, 0, &scratch, &more));
  EXPECT_EQ(more.size(), 6u);
  EXPECT_EQ(state.cached.size(), 16u);
}

}  // namespace
}  // namespace tandem
