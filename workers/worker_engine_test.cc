// The worker engine driven the way the coordinator drives it: a draft engine and a target
// engine, rounds of Draft + Verify over the whole sequence, and the result compared with
// in-process speculation (same seed) and with golden.json (greedy).
#include "workers/worker_engine.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/shared_data_test_util.h"
#include "core/base/status_matchers.h"
#include "core/generation/draft_length_policy.h"
#include "core/generation/round_backends.h"
#include "core/generation/round_driver.h"
#include "core/generation/session.h"
#include "core/generation/speculative_session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "wire/constraint_compiler.h"
#include "workers/engine_test_util.h"

namespace tandem {
namespace {

using ::tandem::testing::LongPrompt;
using ::tandem::testing::NextAfter;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

constexpr int32_t kEos = 2;

std::unique_ptr<WorkerEngine> Engine(WorkerRole role, const std::string& model,
                                     int max_sessions = 4, int64_t budget = 0) {
  absl::StatusOr<std::string> path = testing::SharedFile(model);
  EXPECT_TRUE(path.ok()) << path.status();
  WorkerOptions options;
  options.role = role;
  options.model_path = path.ok() ? *path : "";
  options.threads = 1;
  options.context_size = 256;
  options.max_sessions = max_sessions;
  options.kv_budget_bytes = budget;
  absl::StatusOr<std::unique_ptr<WorkerEngine>> engine = WorkerEngine::Create(options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

// The round driver's backends over engines in this process, each on one of its sessions,
// sending only what the session's cache does not hold yet, as the coordinator's do.
class EngineDraft : public DraftBackend {
 public:
  EngineDraft(WorkerEngine& engine, int64_t session, const SamplerConfig& sampler)
      : engine_(engine), session_(session), sampler_(sampler) {}
  std::future<absl::Status> Prefill(absl::Span<const int32_t> sequence, int64_t end) override {
    return ReadyFuture(engine_.Sync(session_, 0, sequence.first(end), nullptr).status());
  }
  std::future<absl::Status> Draft(absl::Span<const int32_t> sequence, int32_t k,
                                  Proposal* out) override {
    absl::StatusOr<DraftOutput> drafted =
        engine_.Draft(session_, 0, sequence, k, sampler_, nullptr);
    if (drafted.ok()) {
      out->tokens = drafted->guesses;
      out->q = drafted->q;
    }
    return ReadyFuture(drafted.status());
  }

 private:
  WorkerEngine& engine_;
  int64_t session_;
  SamplerConfig sampler_;
};

class EngineTarget : public TargetBackend {
 public:
  EngineTarget(WorkerEngine& engine, int64_t session, const SamplerConfig& sampler,
               int32_t continue_tokens = 0)
      : engine_(engine), session_(session), sampler_(sampler), continue_(continue_tokens) {}
  std::future<absl::Status> Prefill(absl::Span<const int32_t> sequence, int64_t end,
                                    int64_t* reused) override {
    absl::StatusOr<int64_t> held = engine_.Sync(session_, 0, sequence.first(end), nullptr, reused);
    if (held.ok()) known_ = *held;
    return ReadyFuture(held.status());
  }
  std::future<absl::Status> Verify(const VerifyCall& call, Verdict* out) override {
    const int64_t pending = static_cast<int64_t>(call.sequence.size()) - 1;
    const int64_t from = std::min(known_, pending);
    const Proposal& proposal = *call.proposal;
    std::vector<SparseDistribution> q(
        proposal.q.begin(),
        proposal.q.begin() + std::min(proposal.q.size(), proposal.tokens.size()));
    absl::StatusOr<AcceptanceResult> verdict = engine_.Verify(
        session_, from, call.sequence.subspan(from, pending - from), call.sequence.back(),
        call.proposal->tokens, q, sampler_, nullptr, /*logprobs=*/nullptr,
        std::min(call.continue_limit, continue_), &out->continued);
    if (!verdict.ok()) return ReadyFuture(verdict.status());
    out->accepted = verdict->accepted;
    out->next_token = verdict->next_token;
    // The cache holds the sequence, the kept guesses and every token drawn but the last.
    known_ = pending + 1 + out->accepted + static_cast<int64_t>(out->continued.size());
    return ReadyFuture(absl::OkStatus());
  }

 private:
  WorkerEngine& engine_;
  int64_t session_;
  SamplerConfig sampler_;
  int32_t continue_;
  int64_t known_ = 0;
};

// Generates through two engines with the round driver, as the coordinator does over their
// streams (k = 0: the target alone): EOS stops before it is reported; max_tokens caps the
// output.
std::vector<int32_t> Speculate(WorkerEngine& draft, WorkerEngine& target,
                               std::vector<int32_t> sequence, int max_tokens, int32_t k,
                               const SamplerConfig& sampler) {
  absl::StatusOr<int64_t> d = draft.OpenSession(0), t = target.OpenSession(0);
  if (!d.ok() || !t.ok()) {
    ADD_FAILURE() << d.status() << " / " << t.status();
    return {};
  }
  EngineDraft draft_backend(draft, *d, sampler);
  EngineTarget target_backend(target, *t, sampler);
  FixedDraftLength policy(k);
  RoundDriver driver(target_backend, k > 0 ? &draft_backend : nullptr, nullptr, policy);
  const std::vector<int32_t> stop_ids = {kEos};
  RoundLimits limits;
  limits.stop_ids = stop_ids;
  limits.max_tokens = max_tokens;
  limits.context_size = target.context_size();
  std::vector<int32_t> out;
  auto collect = [&](std::vector<int32_t>& tokens) {
    out.insert(out.end(), tokens.begin(), tokens.end());
    return true;
  };
  EXPECT_OK(driver.Generate(sequence, limits, collect).status());
  return out;
}

TEST(WorkerEngineTest, DistributedRoundsEqualInProcessSpeculationForTheSameSeed) {
  auto target = Engine(WorkerRole::kTarget, "models/stories260K/stories260K.gguf");
  auto draft =
      Engine(WorkerRole::kDraft, "models/stories260K/derived/stories-draft-distilled.gguf");
  ASSERT_NE(target, nullptr);
  ASSERT_NE(draft, nullptr);
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};  // "Once upon a time"
  std::vector<SamplerConfig> configs;
  for (float temperature : {0.0f, 0.8f}) {
    SamplerConfig sampler;
    sampler.temperature = temperature;
    sampler.top_p = 0.95f;
    sampler.seed = 1234;
    configs.push_back(sampler);
    // Issue #30's steps; the coordinator tells the workers where the output starts.
    sampler.logit_bias = {{13, -100}, {400, 1.5f}};
    sampler.presence_penalty = 0.6f;
    sampler.frequency_penalty = -0.4f;
    sampler.output_start = static_cast<int64_t>(prompt.size());
    configs.push_back(sampler);
  }
  for (const SamplerConfig& sampler : configs) {
    const std::vector<int32_t> distributed = Speculate(*draft, *target, prompt, 40, 4, sampler);

    ThreadPool pool(1);
    SpeculativeOptions options;
    options.session.sampler = sampler;
    options.session.context_size = 256;
    options.session.stop_ids = {kEos};
    options.draft_tokens = 4;
    ASSERT_OK_AND_ASSIGN(
        auto session, SpeculativeSession::Create(target->model(), draft->model(), pool, options));
    std::vector<int32_t> in_process;
    ASSERT_OK(session
                  ->Generate(prompt, 40,
                             [&](int32_t t) {
                               in_process.push_back(t);
                               return true;
                             })
                  .status());
    EXPECT_EQ(distributed, in_process)
        << "temperature " << sampler.temperature << " presence " << sampler.presence_penalty;
    EXPECT_EQ(distributed.size(), 40u);
  }
}

// Without a draft the coordinator asks the target for verifies with no guesses; in-process,
// tandem-chat runs a Session. Both draw each token by one rule (DrawTargetToken), so the same
// seed gives the same tokens.
TEST(WorkerEngineTest, VerifiesWithoutGuessesEqualAnInProcessSessionForTheSameSeed) {
  auto target = Engine(WorkerRole::kTarget, "models/stories260K/stories260K.gguf");
  auto draft = Engine(WorkerRole::kDraft, "models/stories260K/stories260K.gguf");
  ASSERT_NE(target, nullptr);
  ASSERT_NE(draft, nullptr);
  ThreadPool pool(1);
  for (uint64_t seed : {5ull, 77ull, 1234ull}) {
    SamplerConfig sampler;  // tandem-chat's defaults, hotter
    sampler.temperature = 1.2f;
    sampler.top_k = 40;
    sampler.top_p = 0.95f;
    sampler.min_p = 0.05f;
    sampler.seed = seed;
    const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
    const std::vector<int32_t> remote = Speculate(*draft, *target, prompt, 40, /*k=*/0, sampler);

    SessionOptions options;
    options.sampler = sampler;
    options.context_size = 256;
    options.stop_ids = {kEos};
    ASSERT_OK_AND_ASSIGN(auto session, Session::Create(target->model(), pool, options));
    std::vector<int32_t> in_process;
    ASSERT_OK(session
                  ->Generate(prompt, 40,
                             [&](int32_t t) {
                               in_process.push_back(t);
                               return true;
                             })
                  .status());
    EXPECT_EQ(remote, in_process) << "seed " << seed;
    EXPECT_GE(remote.size(), 10u) << "seed " << seed;
  }
}

TEST(WorkerEngineTest, GreedyRoundsReproduceTheGoldenContinuation) {
  auto target = Engine(WorkerRole::kTarget, "models/stories260K/stories260K.gguf");
  auto draft = Engine(WorkerRole::kDraft, "models/stories260K/derived/stories260K-Q4_0.gguf");
  ASSERT_NE(target, nullptr);
  ASSERT_NE(draft, nullptr);
  SamplerConfig greedy;
  greedy.temperature = 0;
  const std::vector<int32_t> golden = {432, 383, 286, 261, 376, 298, 315, 421, 395, 317};
  EXPECT_EQ(Speculate(*draft, *target, {1, 403, 407, 261, 378}, 10, 3, greedy), golden);
}

// --- #31 activations-invariance ---
// Engines loaded in an activation precision (WorkerOptions::model_load, --activations).
std::unique_ptr<WorkerEngine> EngineIn(WorkerRole role, const std::string& model,
                                       ActivationPrecision activations) {
  absl::StatusOr<std::string> path = testing::SharedFile(model);
  EXPECT_TRUE(path.ok()) << path.status();
  WorkerOptions options;
  options.role = role;
  options.model_path = path.ok() ? *path : "";
  options.threads = 2;
  options.context_size = 256;
  options.model_load.activations = activations;
  absl::StatusOr<std::unique_ptr<WorkerEngine>> engine = WorkerEngine::Create(options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

// A Q4_K_M (Q4_K and Q6_K) target engine in int8 mode: greedy rounds with a Q2_K draft engine
// in either precision give the target engine's own output alone (k = 0), for k 1, 4 and 8.
TEST(WorkerEngineTest, GreedyRoundsOfAnInt8TargetEqualItAloneForDraftsOfEitherPrecision) {
  auto target = EngineIn(WorkerRole::kTarget, "models/fixtures/llama-Q4_K_M.gguf",
                         ActivationPrecision::kInt8);
  ASSERT_NE(target, nullptr);
  SamplerConfig greedy;
  greedy.temperature = 0;
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  const std::vector<int32_t> alone = Speculate(*target, *target, prompt, 48, 0, greedy);
  ASSERT_EQ(alone.size(), 48u);
  for (ActivationPrecision p : {ActivationPrecision::kInt8, ActivationPrecision::kInt16}) {
    auto draft = EngineIn(WorkerRole::kDraft, "models/fixtures/llama-Q2_K.gguf", p);
    ASSERT_NE(draft, nullptr);
    for (int32_t k : {1, 4, 8}) {
      EXPECT_EQ(Speculate(*draft, *target, prompt, 48, k, greedy), alone)
          << "draft " << ActivationPrecisionName(p) << " k=" << k;
    }
  }
}
// --- end ---

TEST(WorkerEngineTest, AtTheSessionLimitTheLeastRecentlyUsedIdleSessionIsEvicted) {
  auto target = Engine(WorkerRole::kTarget, "models/stories260K/stories260K.gguf", 2);
  ASSERT_NE(target, nullptr);
  ASSERT_OK_AND_ASSIGN(int64_t a, target->OpenSession(0));
  ASSERT_OK_AND_ASSIGN(int64_t b, target->OpenSession(0));
  EXPECT_NE(a, b);
  EXPECT_THAT(target->Sync(a, 0, {1, 403}, nullptr), tandem::testing::IsOkAndHolds(2));
  std::vector<int64_t> evicted;
  ASSERT_OK_AND_ASSIGN(int64_t c, target->OpenSession(0, &evicted));  // b is the older one
  EXPECT_EQ(evicted, std::vector<int64_t>{b});
  EXPECT_EQ(target->active_sessions(), 2);
  EXPECT_THAT(target->Sync(b, 0, {1}, nullptr),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("evicted")));
  EXPECT_THAT(target->Sync(a, 2, {407}, nullptr), tandem::testing::IsOkAndHolds(3));
  target->CloseSession(b);  // its stream ends
  EXPECT_THAT(target->Sync(b, 0, {1}, nullptr), StatusIs(absl::StatusCode::kNotFound));
  evicted.clear();
  ASSERT_OK(target->OpenSession(0, &evicted).status());  // now c is the older one
  EXPECT_EQ(evicted, std::vector<int64_t>{c});
  EXPECT_EQ(target->active_sessions(), 2);
}

TEST(WorkerEngineTest, TheKvBudgetPreemptsIdleSessionsBlocksAndTheyRefillTransparently) {
  // One block: 16 positions x 5 layers x 4 KV heads x 8 dims x 2 (K, V) x 2 bytes = 10240.
  constexpr int64_t kBlock = 10240;
  auto reference = Engine(WorkerRole::kTarget, "models/stories260K/stories260K.gguf", 8);
  auto budgeted =
      Engine(WorkerRole::kTarget, "models/stories260K/stories260K.gguf", 8, 14 * kBlock);
  ASSERT_NE(reference, nullptr);
  ASSERT_NE(budgeted, nullptr);
  const std::vector<int32_t> a_prompt = LongPrompt(1, 200), b_prompt = LongPrompt(2, 200);
  ASSERT_OK_AND_ASSIGN(int64_t ref, reference->OpenSession(0));
  ASSERT_OK_AND_ASSIGN(int32_t a_expected, NextAfter(*reference, ref, a_prompt, 0));

  // A takes 13 blocks of 14; B needs 13 more: A is idle, so its blocks are reclaimed.
  ASSERT_OK_AND_ASSIGN(int64_t a, budgeted->OpenSession(0));
  ASSERT_OK_AND_ASSIGN(int64_t b, budgeted->OpenSession(0));
  EXPECT_THAT(budgeted->Sync(a, 0, a_prompt, nullptr), tandem::testing::IsOkAndHolds(200));
  EXPECT_EQ(budgeted->kv_bytes_in_use(), 13 * kBlock);
  EXPECT_THAT(budgeted->Sync(b, 0, b_prompt, nullptr), tandem::testing::IsOkAndHolds(200));
  EXPECT_EQ(budgeted->preemptions(), 1);
  EXPECT_LE(budgeted->kv_bytes_in_use(), 14 * kBlock);
  // A comes back at position 200 as if nothing happened: the worker re-runs what it lost.
  EXPECT_THAT(NextAfter(*budgeted, a, a_prompt, 199), tandem::testing::IsOkAndHolds(a_expected));
  EXPECT_EQ(budgeted->preemptions(), 2);  // B was idle in turn
  EXPECT_EQ(budgeted->active_sessions(), 2);

  // A session that alone outgrows the budget is refused, naming it; others are unharmed.
  ASSERT_OK_AND_ASSIGN(int64_t big, budgeted->OpenSession(0));
  EXPECT_THAT(budgeted->Sync(big, 0, LongPrompt(3, 256), nullptr),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("KV budget")));
  EXPECT_THAT(NextAfter(*budgeted, a, a_prompt, 199), tandem::testing::IsOkAndHolds(a_expected));
  EXPECT_THAT(budgeted->OpenSession(100000), StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_OK_AND_ASSIGN(std::string path,
                       testing::SharedFile("models/stories260K/stories260K.gguf"));
  WorkerOptions tiny;
  tiny.model_path = path;
  tiny.kv_budget_bytes = 1000;  // less than one block: refused at start
  EXPECT_THAT(WorkerEngine::Create(tiny).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("holds no block")));
}

TEST(WorkerEngineTest, ReportsItsKvBudgetInBlocksForAdmission) {
  // 14 blocks of 10240 bytes (stories260K, f16) and a little more: the pool holds 14.
  constexpr int64_t kBlock = 10240;
  auto budgeted =
      Engine(WorkerRole::kTarget, "models/stories260K/stories260K.gguf", 4, 14 * kBlock + 100);
  auto unbounded = Engine(WorkerRole::kTarget, "models/stories260K/stories260K.gguf");
  ASSERT_NE(budgeted, nullptr);
  ASSERT_NE(unbounded, nullptr);
  EXPECT_EQ(budgeted->kv_capacity().global_blocks, 14);
  EXPECT_EQ(budgeted->kv_capacity().sliding_blocks, 0);  // no sliding layer
  EXPECT_EQ(budgeted->kv_capacity().ring_blocks, 0);
  EXPECT_EQ(unbounded->kv_capacity().global_blocks, 0);
}

TEST(WorkerEngineTest, ASharedPromptPrefixIsComputedOnceAndReportedAsReused) {
  auto target = Engine(WorkerRole::kTarget, "models/stories260K/stories260K.gguf", 8);
  ASSERT_NE(target, nullptr);
  std::vector<int32_t> first = LongPrompt(4, 100), second = first;
  second.back() = 77;  // same 99-token prefix, another last token
  ASSERT_OK_AND_ASSIGN(int64_t a, target->OpenSession(0));
  ASSERT_OK_AND_ASSIGN(int64_t b, target->OpenSession(0));
  int64_t reused = -1;
  ASSERT_OK(target->Sync(a, 0, first, nullptr, &reused).status());
  EXPECT_EQ(reused, 0);
  ASSERT_OK(target->Sync(b, 0, second, nullptr, &reused).status());
  EXPECT_EQ(reused, 96);  // six full blocks of 16 from a's cache; the rest computed
  EXPECT_EQ(target->kv_blocks().shared, 6);
  // Both continue exactly as if each had computed everything itself.
  auto alone = Engine(WorkerRole::kTarget, "models/stories260K/stories260K.gguf", 8);
  ASSERT_NE(alone, nullptr);
  ASSERT_OK_AND_ASSIGN(int64_t ref, alone->OpenSession(0));
  ASSERT_OK_AND_ASSIGN(int32_t expected, NextAfter(*alone, ref, second, 0));
  std::vector<int32_t> next = second;
  EXPECT_THAT(NextAfter(*target, b, second, 99), tandem::testing::IsOkAndHolds(expected));
}

TEST(WorkerEngineTest, SyncReportsHowMuchOfTheSequenceTheCacheAlreadyHeld) {
  auto target = Engine(WorkerRole::kTarget, "models/stories260K/stories260K.gguf");
  ASSERT_NE(target, nullptr);
  ASSERT_OK_AND_ASSIGN(int64_t s, target->OpenSession(16));
  int64_t reused = -1;
  EXPECT_THAT(target->Sync(s, 0, {1, 403, 407}, nullptr, &reused),
              tandem::testing::IsOkAndHolds(3));
  EXPECT_EQ(reused, 0);  // a fresh cache
  EXPECT_THAT(target->Sync(s, 3, {261}, nullptr, &reused), tandem::testing::IsOkAndHolds(4));
  EXPECT_EQ(reused, 3);  // the position
  EXPECT_THAT(target->Sync(s, 1, {403, 407, 378}, nullptr, &reused),
              tandem::testing::IsOkAndHolds(4));
  EXPECT_EQ(reused, 3);  // 403 407 were still there after position 1
  ASSERT_OK_AND_ASSIGN(int64_t fresh, target->OpenSession(16));
  EXPECT_THAT(target->Sync(fresh, 0, {1, 403, 407, 261}, nullptr, &reused),
              tandem::testing::IsOkAndHolds(4));
  EXPECT_EQ(reused, 0);  // another session's cache is not this one's
}

TEST(WorkerEngineTest, BadRequestsGetExactCodesAndLeaveTheSessionUsable) {
  auto target = Engine(WorkerRole::kTarget, "models/stories260K/stories260K.gguf");
  ASSERT_NE(target, nullptr);
  ASSERT_OK_AND_ASSIGN(int64_t s, target->OpenSession(16));
  EXPECT_THAT(target->Sync(s, 0, {1, 403}, nullptr), tandem::testing::IsOkAndHolds(2));
  EXPECT_THAT(target->Sync(s, 5, {1}, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("position 5")));
  EXPECT_THAT(target->Sync(s, 2, {512}, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("token 512")));
  EXPECT_THAT(target->Sync(s, 0, std::vector<int32_t>(17, 5), nullptr),
              StatusIs(absl::StatusCode::kOutOfRange));
  EXPECT_THAT(target->Sync(99, 0, {1}, nullptr), StatusIs(absl::StatusCode::kNotFound));
  SamplerConfig bad;
  bad.top_p = 0;
  EXPECT_THAT(target->Draft(s, 0, {1}, 2, bad, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("top_p")));
  EXPECT_THAT(target->Draft(s, 0, {1}, 0, SamplerConfig(), nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("draft tokens 0")));
  SamplerConfig before_zero;  // VerifyRequest.output_start < 0
  before_zero.output_start = -1;
  EXPECT_THAT(target->Verify(s, 0, {1}, 403, {}, {}, before_zero, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("output_start")));
  SamplerConfig unordered;  // logit_bias not by increasing id (a proto map is sorted first)
  unordered.logit_bias = {{9, 1}, {3, 1}};
  EXPECT_THAT(target->Draft(s, 0, {1}, 2, unordered, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("logit_bias")));
  SparseDistribution broken{{7, 3}, {0.5f, 0.5f}};  // ids not increasing
  EXPECT_THAT(target->Verify(s, 0, {1}, 403, {7}, {broken}, SamplerConfig(), nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("guess 0")));
  // Still usable, and the cache still holds what it held.
  WorkTiming timing;
  EXPECT_THAT(target->Sync(s, 2, {407}, &timing), tandem::testing::IsOkAndHolds(3));
  EXPECT_GT(timing.compute_seconds, 0.0);
}

// Issue #10, item 4: the target does not trust the draft's q. Each malformed q is an
// INVALID_ARGUMENT naming the guess; before, q(g) = 0 meant the guess was always kept and a
// mass of 1e30 was used as is.
TEST(WorkerEngineTest, VerifyRejectsDraftDistributionsThatCouldNotHaveDrawnTheGuess) {
  auto target = Engine(WorkerRole::kTarget, "models/stories260K/stories260K.gguf");
  ASSERT_NE(target, nullptr);
  ASSERT_OK_AND_ASSIGN(int64_t s, target->OpenSession(32));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const SparseDistribution good{{407, 500}, {0.5f, 0.5f}};
  struct Case {
    std::string name;
    std::vector<int32_t> guesses;
    std::vector<SparseDistribution> q;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"q(g) = 0",
       {407},
       {{{300, 407}, {1.0f, 0.0f}}},
       "guess 0: draft distribution gives the "
       "guess 407 no probability"},
      {"guess outside q's support",
       {407},
       {{{300}, {1.0f}}},
       "guess 0: draft distribution "
       "gives the guess 407"},
      {"mass 1e30", {407}, {{{407}, {1e30f}}}, "guess 0: draft distribution has total mass 1e+30"},
      {"the second q short of mass",
       {407, 500},
       {good, {{500}, {0.5f}}},
       "guess 1: draft "
       "distribution has total "
       "mass 0.5"},
      {"nan", {407}, {{{407, 500}, {nan, 1.0f}}}, "guess 0: distribution probability"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(target->Verify(s, 0, {1}, 403, c.guesses, c.q, SamplerConfig(), nullptr),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.name;
  }
  // A q within the tolerance of 1 is accepted (and renormalised), and the session is usable.
  const SparseDistribution close{{407, 500}, {0.5f, 0.5004f}};
  ASSERT_OK_AND_ASSIGN(AcceptanceResult r, target->Verify(s, 0, {1}, 403, {407, 500}, {close, good},
                                                          SamplerConfig(), nullptr));
  EXPECT_GE(r.accepted, 0);
  EXPECT_LE(r.accepted, 2);
  EXPECT_GE(r.next_token, 0);
  EXPECT_LT(r.next_token, 512);
}

// A --threads flag beyond what a pool may start is refused before anything loads; before,
// the pool's thread vector or std::thread threw and the worker terminated.
TEST(WorkerEngineTest, AThreadCountBeyondThePoolLimitIsRefused) {
  WorkerOptions options;
  options.model_path = "/never/read.gguf";
  options.threads = std::numeric_limits<int>::max();
  EXPECT_THAT(WorkerEngine::Create(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("threads 2147483647")));
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

// Rounds without guesses that let the target continue alone (up to 3 tokens a verify), as
// the coordinator drives them: each verify starts after the tokens the cache holds.
std::vector<int32_t> ContinuedRounds(WorkerEngine& engine, int64_t session,
                                     std::vector<int32_t> seq, size_t length,
                                     const SamplerConfig& sampler, int64_t* continued_total) {
  EngineTarget target(engine, session, sampler, /*continue_tokens=*/3);
  FixedDraftLength no_guesses(0);
  RoundEvents events;
  events.round_done = [&](const RoundReport& round) {
    *continued_total += round.yielded - round.accepted - 1;
  };
  RoundDriver driver(target, nullptr, nullptr, no_guesses, {}, events);
  RoundLimits limits;
  limits.max_tokens = static_cast<int64_t>(length - seq.size());
  limits.context_size = engine.context_size();
  auto keep = [](std::vector<int32_t>&) { return true; };
  EXPECT_OK(driver.Generate(seq, limits, keep).status());
  return seq;
}

TEST(WorkerEngineTest, ABusyTargetContinuesAloneWithTheTokensOfOneTokenRounds) {
  constexpr int kSessions = 8;
  auto target = Engine(WorkerRole::kTarget, "models/stories260K/stories260K.gguf", kSessions);
  ASSERT_NE(target, nullptr);
  std::vector<SamplerConfig> samplers(kSessions);
  std::vector<std::vector<int32_t>> expected(kSessions), got(kSessions);
  ThreadPool pool(1);
  for (int i = 0; i < kSessions; ++i) {
    samplers[i].temperature = i % 2 == 0 ? 0.0f : 1.1f;
    samplers[i].seed = 100 + i;
    SessionOptions options;
    options.sampler = samplers[i];
    options.context_size = 256;
    ASSERT_OK_AND_ASSIGN(auto session, Session::Create(target->model(), pool, options));
    const std::vector<int32_t> prompt = LongPrompt(i, 12);
    expected[i] = prompt;
    ASSERT_OK(session
                  ->Generate(prompt, 48,
                             [&](int32_t t) {
                               expected[i].push_back(t);
                               return true;
                             })
                  .status());
  }
  std::vector<int64_t> continued(kSessions, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < kSessions; ++i) {
    threads.emplace_back([&, i] {
      absl::StatusOr<int64_t> s = target->OpenSession(0);
      ASSERT_OK(s.status());
      got[i] = ContinuedRounds(*target, *s, LongPrompt(i, 12), expected[i].size(), samplers[i],
                               &continued[i]);
    });
  }
  for (std::thread& t : threads) t.join();
  int64_t total = 0;
  for (int i = 0; i < kSessions; ++i) {
    EXPECT_EQ(got[i], expected[i]) << "session " << i;
    total += continued[i];
  }
  EXPECT_GT(total, 0) << "eight sessions at once never shared a step with four others";

  // A lone session gets one token per verify: each token streams as soon as it is drawn.
  ASSERT_OK_AND_ASSIGN(int64_t lone, target->OpenSession(0));
  ASSERT_OK(target->Sync(lone, 0, {1}, nullptr).status());  // a step of its own
  int64_t lone_continued = 0;
  EXPECT_EQ(ContinuedRounds(*target, lone, LongPrompt(0, 12), expected[0].size(), samplers[0],
                            &lone_continued),
            expected[0]);
  EXPECT_EQ(lone_continued, 0);
  std::vector<int32_t> out;
  EXPECT_THAT(target->Verify(lone, 0, {1}, 403, {}, {}, samplers[0], nullptr, nullptr, 65, &out),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("continue_tokens 65")));
}

// Constrained (Constrain, as the coordinator sends it once per request): every sentence the
// model may say is one of the grammar's.
const ConstraintSpec kSentence{ConstraintSpec::Kind::kGrammar,
                               R"(root ::= name " was " mood "."
name ::= "Tim" | "Lily" | "Sue"
mood ::= "happy" | "sad")"};

bool IsSentence(const std::string& text) {
  for (const char* name : {"Tim", "Lily", "Sue"}) {
    for (const char* mood : {"happy", "sad"}) {
      if (text == absl::StrCat(name, " was ", mood, ".")) return true;
    }
  }
  return false;
}

// The output of constrained rounds through the engines (each with its own constraint) with
// the coordinator's forced tokens, and of in-process constrained speculation, for one seed.
struct ConstrainedRun {
  std::vector<int32_t> distributed;
  std::vector<int32_t> in_process;
};

ConstrainedRun RunConstrained(WorkerEngine& draft, WorkerEngine& target,
                              const std::vector<int32_t>& prompt, int32_t k,
                              const SamplerConfig& sampler) {
  ConstrainedRun run;
  const std::vector<int32_t> stop_ids = {kEos};
  absl::StatusOr<int64_t> d = draft.OpenSession(0), t = target.OpenSession(0);
  EXPECT_OK(d.status());
  EXPECT_OK(t.status());
  if (!d.ok() || !t.ok()) return run;
  const int64_t start = static_cast<int64_t>(prompt.size());
  EXPECT_OK(draft.Constrain(*d, kSentence, start, stop_ids));
  EXPECT_OK(target.Constrain(*t, kSentence, start, stop_ids));
  ConstraintCompiler compiler(ConstraintCompiler::TokenBytes(target.tokenizer()));
  absl::StatusOr<std::unique_ptr<TokenConstraint>> forced = compiler.New(kSentence, stop_ids);
  EXPECT_OK(forced.status());
  if (!forced.ok()) return run;
  EngineDraft draft_backend(draft, *d, sampler);
  EngineTarget target_backend(target, *t, sampler);
  FixedDraftLength policy(k);
  RoundDriverOptions options;
  options.forced_tokens = forced->get();
  RoundDriver driver(target_backend, &draft_backend, nullptr, policy, options);
  RoundLimits limits;
  limits.stop_ids = stop_ids;
  limits.max_tokens = 40;
  limits.context_size = target.context_size();
  std::vector<int32_t> sequence = prompt;
  EXPECT_OK(driver
                .Generate(sequence, limits,
                          [&](std::vector<int32_t>& tokens) {
                            run.distributed.insert(run.distributed.end(), tokens.begin(),
                                                   tokens.end());
                            return true;
                          })
                .status());

  ThreadPool pool(1);
  SpeculativeOptions in_process;
  in_process.session.sampler = sampler;
  in_process.session.context_size = 256;
  in_process.session.stop_ids = stop_ids;
  in_process.draft_tokens = k;
  absl::StatusOr<std::unique_ptr<SpeculativeSession>> session =
      SpeculativeSession::Create(target.model(), draft.model(), pool, in_process);
  absl::StatusOr<std::unique_ptr<TokenConstraint>> own = compiler.New(kSentence, stop_ids);
  EXPECT_OK(session.status());
  EXPECT_OK(own.status());
  if (!session.ok() || !own.ok()) return run;
  EXPECT_OK((*session)
                ->Generate(prompt, 40,
                           [&](int32_t token) {
                             run.in_process.push_back(token);
                             return true;
                           },
                           {own->get(), own->get(), own->get()})
                .status());
  return run;
}

TEST(WorkerEngineTest, ConstrainedRoundsMatchTheGrammarAndEqualInProcessSpeculation) {
  auto target = Engine(WorkerRole::kTarget, "models/stories260K/stories260K.gguf");
  auto draft =
      Engine(WorkerRole::kDraft, "models/stories260K/derived/stories-draft-distilled.gguf");
  ASSERT_NE(target, nullptr);
  ASSERT_NE(draft, nullptr);
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};  // "Once upon a time"
  for (float temperature : {0.0f, 1.0f}) {
    for (uint64_t seed : {3ull, 41ull}) {
      SamplerConfig sampler;
      sampler.temperature = temperature;
      sampler.seed = seed;
      const ConstrainedRun run = RunConstrained(*draft, *target, prompt, 4, sampler);
      EXPECT_EQ(run.distributed, run.in_process) << "temperature " << temperature;
      // The EOS that ended it is not reported: the text is a whole sentence of the grammar.
      ASSERT_OK_AND_ASSIGN(std::string text, target->tokenizer().Decode(
                                                 run.distributed, {.strip_leading_space = false}));
      EXPECT_TRUE(IsSentence(text)) << "'" << text << "'";
    }
  }
}

TEST(WorkerEngineTest, ABadConstraintIsInvalidArgumentAndTheSessionGoesOnUnconstrained) {
  auto target = Engine(WorkerRole::kTarget, "models/stories260K/stories260K.gguf");
  ASSERT_NE(target, nullptr);
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  ASSERT_OK_AND_ASSIGN(int64_t s, target->OpenSession(0));
  ASSERT_OK(target->Sync(s, 0, absl::MakeConstSpan(prompt).first(4), nullptr).status());
  ASSERT_OK_AND_ASSIGN(const int32_t free_token, NextAfter(*target, s, prompt, 4));

  ASSERT_OK(target->Constrain(s, kSentence, 5, {kEos}));
  ASSERT_OK_AND_ASSIGN(const int32_t constrained, NextAfter(*target, s, prompt, 4));
  ASSERT_OK_AND_ASSIGN(absl::string_view first, target->tokenizer().TokenBytes(constrained));
  EXPECT_TRUE(absl::string_view("TimLilySue").find(first) != absl::string_view::npos) << first;

  EXPECT_THAT(target->Constrain(s, {ConstraintSpec::Kind::kGrammar, "root ::= nothing"}, 5, {kEos}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nothing")));
  EXPECT_THAT(NextAfter(*target, s, prompt, 4), tandem::testing::IsOkAndHolds(free_token));
  EXPECT_THAT(target->Constrain(s, kSentence, -1, {kEos}),
              StatusIs(absl::StatusCode::kInvalidArgument, "start_position -1 < 0"));
  EXPECT_THAT(target->Constrain(99, kSentence, 5, {kEos}), StatusIs(absl::StatusCode::kNotFound));

  ASSERT_OK(target->Constrain(s, kSentence, 5, {kEos}));
  ASSERT_OK(target->Constrain(s, ConstraintSpec(), 0, {}));  // kNone clears it
  EXPECT_THAT(NextAfter(*target, s, prompt, 4), tandem::testing::IsOkAndHolds(free_token));
}

}  // namespace
}  // namespace tandem
