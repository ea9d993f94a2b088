#include "core/generation/session.h"

#include <memory>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/decoder/decoder.h"
#include "core/generation/acceptance.h"
#include "core/generation/generation_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::kEos;
using ::tandem::testing::kTargetPath;
using ::tandem::testing::SharedModel;
using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// Greedy from BOS, stories260K says: 403 407 261 378 432 383 ...
const std::vector<int32_t> kBos = {1};

SessionOptions Greedy(std::vector<int32_t> stop_ids = {kEos}, int64_t context_size = 256) {
  SessionOptions options;
  options.sampler.temperature = 0.0f;
  options.context_size = context_size;
  options.stop_ids = std::move(stop_ids);
  return options;
}

SessionOptions Sampled(uint64_t seed, int64_t context_size = 256) {
  SessionOptions options;
  options.sampler.temperature = 0.8f;
  options.sampler.top_k = 40;
  options.sampler.top_p = 0.95f;
  options.sampler.min_p = 0.02f;
  options.sampler.repetition_penalty = 1.3f;
  options.sampler.penalty_window = 16;
  options.sampler.seed = seed;
  options.context_size = context_size;
  options.stop_ids = {kEos};
  return options;
}

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK_AND_ASSIGN(model_, SharedModel(kTargetPath)); }

  std::unique_ptr<Session> NewSession(const SessionOptions& options) {
    absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(*model_, pool_, options);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? std::move(*session) : nullptr;
  }

  // Generates, collecting the reported tokens.
  absl::StatusOr<GenerationResult> Run(Session& session, const std::vector<int32_t>& context,
                                       int64_t max_tokens, std::vector<int32_t>* tokens,
                                       int32_t stop_after = -1) {
    return session.Generate(context, max_tokens, [&](int32_t token) {
      tokens->push_back(token);
      return token != stop_after;
    });
  }

  const Model* model_ = nullptr;
  ThreadPool pool_{1};
};

TEST_F(SessionTest, GreedyReproducesTheGoldenContinuations) {
  ASSERT_OK_AND_ASSIGN(std::vector<testing::GoldenCase> cases, testing::StoriesGoldenCases());
  ASSERT_EQ(cases.size(), 4u);
  std::unique_ptr<Session> session = NewSession(Greedy({kEos}, 0));
  for (const testing::GoldenCase& c : cases) {
    std::vector<int32_t> tokens;
    ASSERT_OK_AND_ASSIGN(GenerationResult r, Run(*session, c.prompt_ids, 128, &tokens));
    EXPECT_EQ(tokens, c.greedy_ids);
    EXPECT_EQ(r.stop_reason, StopReason::kMaxTokens);
  }
}

// The reference: a plain loop over the Decoder and Sampler, the sampler's context being every
// token so far (prompt and reply).
std::vector<int32_t> ReferenceLoop(const Model& model, ThreadPool& pool,
                                   const SessionOptions& options, std::vector<int32_t> tokens,
                                   int64_t max_tokens) {
  Decoder decoder(model, pool);
  auto cache = decoder.NewCache(options.context_size, options.kv_type);
  auto sampler = Sampler::Create(options.sampler, model.config().vocab_size);
  if (!cache.ok() || !sampler.ok()) {
    ADD_FAILURE() << cache.status() << " / " << sampler.status();
    return {};
  }
  std::vector<int32_t> reply;
  auto logits = decoder.Forward(**cache, tokens, 0, LogitsMode::kLast);
  while (logits.ok()) {
    const int64_t position = static_cast<int64_t>(tokens.size());
    std::vector<float> p(model.config().vocab_size);
    sampler->Distribution(*logits, tokens, absl::MakeSpan(p));
    const int32_t token =
        DrawTargetToken(DistributionView::Dense(p), options.sampler.seed, position);
    if (token == kEos) break;
    reply.push_back(token);
    if (static_cast<int64_t>(reply.size()) == max_tokens) break;
    tokens.push_back(token);
    logits = decoder.Forward(**cache, {token}, position, LogitsMode::kLast);
  }
  EXPECT_TRUE(logits.ok()) << logits.status();
  return reply;
}

TEST_F(SessionTest, SampledOutputMatchesAReferenceLoopWithPenaltyOverPromptAndReply) {
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  for (uint64_t seed : {0ull, 1ull, 12345ull}) {
    std::unique_ptr<Session> session = NewSession(Sampled(seed));
    std::vector<int32_t> tokens;
    ASSERT_OK(Run(*session, prompt, 40, &tokens).status());
    EXPECT_EQ(tokens, ReferenceLoop(*model_, pool_, Sampled(seed), prompt, 40)) << seed;
  }
}

TEST_F(SessionTest, SecondTurnRunsOnlyTheNewTokensAndMatchesAFreshSession) {
  for (const SessionOptions& options : {Greedy(), Sampled(7)}) {
    std::unique_ptr<Session> session = NewSession(options);
    const std::vector<int32_t> turn1 = {1, 403, 407, 261, 378};
    std::vector<int32_t> reply1;
    ASSERT_OK_AND_ASSIGN(GenerationResult r1, Run(*session, turn1, 6, &reply1));
    EXPECT_EQ(r1.stats.prompt_tokens, 5);
    EXPECT_EQ(r1.stats.reused_tokens, 0);
    ASSERT_EQ(reply1.size(), 6u);

    std::vector<int32_t> turn2 = turn1;
    turn2.insert(turn2.end(), reply1.begin(), reply1.end());
    turn2.insert(turn2.end(), {13, 267});
    std::vector<int32_t> reply2;
    ASSERT_OK_AND_ASSIGN(GenerationResult r2, Run(*session, turn2, 10, &reply2));
    // The cache held the prompt and every reply token but the last (reported, never run).
    EXPECT_EQ(r2.stats.reused_tokens, 5 + 6 - 1);
    EXPECT_EQ(r2.stats.prompt_tokens, 1 + 2);

    std::vector<int32_t> fresh_reply;
    ASSERT_OK(Run(*NewSession(options), turn2, 10, &fresh_reply).status());
    EXPECT_EQ(reply2, fresh_reply);
  }
}

TEST_F(SessionTest, ReusesAtMostAllButOneContextToken) {
  std::unique_ptr<Session> session = NewSession(Greedy());
  std::vector<int32_t> tokens;
  ASSERT_OK(Run(*session, {1, 403, 407, 261}, 3, &tokens).status());
  tokens.clear();
  // The same context again: everything is cached, yet its last token runs again.
  ASSERT_OK_AND_ASSIGN(GenerationResult again, Run(*session, {1, 403, 407, 261}, 3, &tokens));
  EXPECT_EQ(again.stats.reused_tokens, 3);
  EXPECT_EQ(again.stats.prompt_tokens, 1);
  EXPECT_THAT(tokens, ElementsAre(378, 432, 383));
  tokens.clear();
  // A shorter, diverging context reuses only the common prefix.
  ASSERT_OK_AND_ASSIGN(GenerationResult diverged, Run(*session, {1, 403, 300}, 1, &tokens));
  EXPECT_EQ(diverged.stats.reused_tokens, 2);
  EXPECT_EQ(diverged.stats.prompt_tokens, 1);
}

struct StopCase {
  std::string name;
  std::vector<int32_t> stop_ids;
  int32_t callback_stops_after;  // -1: never
  int64_t max_tokens;
  int64_t context_size;
  std::vector<int32_t> reported;
  StopReason reason;
};

TEST_F(SessionTest, StopRulesApplyInOrder) {
  const std::vector<StopCase> cases = {
      {"stop id ends before the token is reported",
       {261},
       -1,
       10,
       64,
       {403, 407},
       StopReason::kStopId},
      {"stop id as the first token reports nothing", {403}, -1, 10, 64, {}, StopReason::kStopId},
      {"stop id comes before the callback", {261}, 261, 10, 64, {403, 407}, StopReason::kStopId},
      {"callback after its token", {}, 407, 10, 64, {403, 407}, StopReason::kCallback},
      {"callback comes before the limit", {}, 407, 2, 64, {403, 407}, StopReason::kCallback},
      {"limit", {}, -1, 3, 64, {403, 407, 261}, StopReason::kMaxTokens},
      {"limit comes before a full cache",
       {},
       -1,
       4,
       4,
       {403, 407, 261, 378},
       StopReason::kMaxTokens},
      {"full cache: the token at the context size is reported",
       {},
       -1,
       10,
       4,
       {403, 407, 261, 378},
       StopReason::kCacheFull},
      {"a one-token cache", {}, -1, 10, 1, {403}, StopReason::kCacheFull},
  };
  for (const StopCase& c : cases) {
    std::unique_ptr<Session> session = NewSession(Greedy(c.stop_ids, c.context_size));
    std::vector<int32_t> tokens;
    ASSERT_OK_AND_ASSIGN(GenerationResult r,
                         Run(*session, kBos, c.max_tokens, &tokens, c.callback_stops_after));
    EXPECT_EQ(tokens, c.reported) << c.name;
    EXPECT_EQ(r.stop_reason, c.reason) << c.name << ": " << StopReasonName(r.stop_reason);
    EXPECT_EQ(r.stats.generated_tokens, static_cast<int64_t>(c.reported.size())) << c.name;
    // The id that ended the call, for the stop-id cases only.
    EXPECT_EQ(r.stop_token, c.reason == StopReason::kStopId ? c.stop_ids[0] : -1) << c.name;
  }
}

TEST_F(SessionTest, TheLimitTokenIsReportedButNeverRun) {
  std::unique_ptr<Session> session = NewSession(Greedy());
  std::vector<int32_t> tokens;
  ASSERT_OK(Run(*session, kBos, 3, &tokens).status());
  EXPECT_THAT(tokens, ElementsAre(403, 407, 261));
  EXPECT_THAT(session->cached_tokens(), ElementsAre(1, 403, 407));
  // The next call's prefix match stops just before it.
  tokens.clear();
  ASSERT_OK_AND_ASSIGN(GenerationResult r, Run(*session, {1, 403, 407, 261}, 1, &tokens));
  EXPECT_EQ(r.stats.reused_tokens, 3);
  EXPECT_EQ(r.stats.prompt_tokens, 1);
  EXPECT_THAT(tokens, ElementsAre(378));
}

TEST_F(SessionTest, ResetForgetsTheConversation) {
  std::unique_ptr<Session> session = NewSession(Greedy());
  std::vector<int32_t> tokens;
  ASSERT_OK(Run(*session, {1, 403, 407}, 2, &tokens).status());
  session->Reset();
  EXPECT_TRUE(session->cached_tokens().empty());
  ASSERT_OK_AND_ASSIGN(GenerationResult r, Run(*session, {1, 403, 407}, 2, &tokens));
  EXPECT_EQ(r.stats.reused_tokens, 0);
}

struct ErrorCase {
  std::string name;
  std::vector<int32_t> context;
  int64_t max_tokens;
  absl::StatusCode code;
  std::string message;
};

TEST_F(SessionTest, GenerateErrorsHaveExactCodesAndLeaveTheSessionUsable) {
  const std::vector<ErrorCase> cases = {
      {"empty context", {}, 5, absl::StatusCode::kInvalidArgument, "empty"},
      {"zero limit", {1}, 0, absl::StatusCode::kInvalidArgument, "max_tokens"},
      {"negative limit", {1}, -3, absl::StatusCode::kInvalidArgument, "max_tokens"},
      {"context longer than the cache", std::vector<int32_t>(9, 1), 5,
       absl::StatusCode::kOutOfRange, "9 tokens"},
      {"id outside the vocabulary (the forward pass's error)",
       {1, 512},
       5,
       absl::StatusCode::kInvalidArgument,
       "512"},
  };
  std::unique_ptr<Session> session = NewSession(Greedy({kEos}, 8));
  for (const ErrorCase& c : cases) {
    EXPECT_THAT(session->Generate(c.context, c.max_tokens, [](int32_t) { return true; }),
                StatusIs(c.code, HasSubstr(c.message)))
        << c.name;
    std::vector<int32_t> tokens;
    ASSERT_OK(Run(*session, kBos, 2, &tokens).status()) << c.name;
    EXPECT_THAT(tokens, ElementsAre(403, 407)) << c.name;
  }
}

TEST_F(SessionTest, CreateRejectsBadOptions) {
  SessionOptions bad_sampler = Greedy();
  bad_sampler.sampler.top_p = 0.0f;
  EXPECT_THAT(Session::Create(*model_, pool_, bad_sampler),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("top_p")));
  SessionOptions bad_context = Greedy();
  bad_context.context_size = -1;
  EXPECT_THAT(Session::Create(*model_, pool_, bad_context),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("context_size")));
}

TEST_F(SessionTest, DefaultContextIsTheModels) {
  std::unique_ptr<Session> session = NewSession(Greedy({kEos}, 0));
  EXPECT_EQ(session->context_size(), model_->config().context_length);
}

TEST_F(SessionTest, StatsCountTokensAndTime) {
  std::unique_ptr<Session> session = NewSession(Greedy());
  std::vector<int32_t> tokens;
  ASSERT_OK_AND_ASSIGN(GenerationResult r, Run(*session, {1, 403, 407, 261, 378}, 20, &tokens));
  EXPECT_EQ(r.stats.prompt_tokens, 5);
  EXPECT_EQ(r.stats.reused_tokens, 0);
  EXPECT_EQ(r.stats.generated_tokens, 20);
  EXPECT_GT(r.stats.prefill_seconds, 0);
  EXPECT_GT(r.stats.decode_seconds, 0);
  EXPECT_DOUBLE_EQ(r.stats.prefill_tokens_per_second(), 5 / r.stats.prefill_seconds);
  EXPECT_DOUBLE_EQ(r.stats.decode_tokens_per_second(), 20 / r.stats.decode_seconds);
  EXPECT_EQ(r.speculation.rounds, 0);
}

TEST_F(SessionTest, ExtremeSamplerSettingsGenerateValidTokens) {
  for (const auto& [name, config] : testing::ExtremeSamplerSettings()) {
    SCOPED_TRACE(name);
    SessionOptions options = Sampled(0);
    options.sampler = config;
    std::unique_ptr<Session> session = NewSession(options);
    ASSERT_NE(session, nullptr);
    std::vector<int32_t> tokens;
    ASSERT_OK_AND_ASSIGN(GenerationResult r, Run(*session, kBos, 48, &tokens));
    ASSERT_FALSE(tokens.empty());
    EXPECT_LE(tokens.size(), 48u);
    for (int32_t token : tokens) {
      EXPECT_GE(token, 0);
      EXPECT_LT(token, model_->config().vocab_size);
    }
    EXPECT_EQ(r.stats.generated_tokens, static_cast<int64_t>(tokens.size()));
  }
}

}  // namespace
}  // namespace tandem
