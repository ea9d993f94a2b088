// RoundDriver (round_driver.h) over scripted backends: a target whose greedy next token is a
// fixed function of the last one, and drafts that guess it right, wrong, or fail. Pins what
// the driver decides: the stop rules over a round's tokens, k under the limits, dropping a
// failed or refused draft for the fallback, continued tokens, and the concurrent prefills.
#include "core/generation/round_driver.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/generation/constraint_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The target's greedy token after `token`.
int32_t Next(int32_t token) { return (token * 7 + 3) % 97 + 3; }

// The target alone: `n` tokens after `pending`.
std::vector<int32_t> Chain(int32_t pending, int n) {
  std::vector<int32_t> out;
  for (int32_t t = pending; static_cast<int>(out.size()) < n;) out.push_back(t = Next(t));
  return out;
}

class ChainTarget : public TargetBackend {
 public:
  std::future<absl::Status> Prefill(absl::Span<const int32_t>, int64_t, int64_t* reused) override {
    *reused = 0;
    prefilled = true;
    if (before_prefill) return std::async(std::launch::async, before_prefill);
    return ReadyFuture(absl::OkStatus());
  }
  std::future<absl::Status> Verify(const VerifyCall& call, Verdict* out) override {
    guesses_seen.push_back(static_cast<int32_t>(call.proposal->tokens.size()));
    if (before_verify) {
      if (absl::Status ready = before_verify(); !ready.ok()) return ReadyFuture(ready);
    }
    if (refuse_guesses && !call.proposal->tokens.empty()) {
      return ReadyFuture(absl::InvalidArgumentError("guess 0 has no probability under q"));
    }
    int32_t last = call.sequence.back();
    out->accepted = 0;
    for (int32_t guess : call.proposal->tokens) {
      if (guess != Next(last)) break;
      last = guess;
      ++out->accepted;
    }
    out->next_token = last = Next(last);
    const int32_t more = extra_continued + std::min(call.continue_limit, continue_tokens);
    for (int32_t i = 0; i < more; ++i) out->continued.push_back(last = Next(last));
    if (accepted_bonus > 0) out->accepted += accepted_bonus;
    out->compute_seconds = compute_seconds;
    return ReadyFuture(absl::OkStatus());
  }

  std::function<absl::Status()> before_prefill;
  std::function<absl::Status()> before_verify;
  std::atomic<bool> prefilled{false};
  bool refuse_guesses = false;
  int32_t continue_tokens = 0;
  int32_t extra_continued = 0;  // a hostile target: more than asked
  int32_t accepted_bonus = 0;   // a hostile target: more kept than guessed
  double compute_seconds = 0;   // what each verify says it computed
  std::vector<int32_t> guesses_seen;
};

class ChainDraft : public DraftBackend {
 public:
  std::future<absl::Status> Prefill(absl::Span<const int32_t>, int64_t) override {
    prefilled = true;
    if (before_prefill) return std::async(std::launch::async, before_prefill);
    return ReadyFuture(absl::OkStatus());
  }
  std::future<absl::Status> Draft(absl::Span<const int32_t> sequence, int32_t k,
                                  Proposal* out) override {
    asked.push_back(k);
    if (++calls == fail_on_call) return ReadyFuture(absl::UnavailableError("draft went away"));
    auto guess = [this, sequence, k, out, call = calls] {
      if (call >= 2) later_call_started = true;
      out->tokens = Chain(sequence.back(), k);
      if (wrong_at >= 0 && wrong_at < k) ++out->tokens[wrong_at];
      out->q.resize(out->tokens.size());
      out->compute_seconds = compute_seconds;
      return absl::OkStatus();
    };
    if (asynchronous) return std::async(std::launch::async, guess);
    return ReadyFuture(guess());
  }
  void Abandon() override { abandoned = true; }

  std::function<absl::Status()> before_prefill;
  std::atomic<bool> prefilled{false};
  int calls = 0;
  std::vector<int32_t> asked;  // k of each call
  int fail_on_call = -1;
  int32_t wrong_at = -1;
  bool asynchronous = false;  // each call on a thread of its own
  std::atomic<bool> later_call_started{false};
  double compute_seconds = 0;  // what each draft call says it computed
  bool abandoned = false;
};

struct Driven {
  absl::StatusOr<GenerationResult> result;
  std::vector<int32_t> tokens;  // as reported
  std::vector<int32_t> sequence;
};

Driven Drive(TargetBackend& target, DraftBackend* draft, DraftBackend* fallback,
             DraftLengthPolicy& policy, const RoundLimits& limits, RoundDriverOptions options = {},
             RoundEvents events = {}, std::optional<size_t> stop_after = std::nullopt) {
  RoundDriver driver(target, draft, fallback, policy, options, events);
  Driven run;
  run.sequence = {1, 5};
  auto on_round = [&](std::vector<int32_t>& tokens) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      run.tokens.push_back(tokens[i]);
      if (stop_after && run.tokens.size() == *stop_after) {
        tokens.resize(i + 1);
        return false;
      }
    }
    return true;
  };
  run.result = driver.Generate(run.sequence, limits, on_round);
  return run;
}

RoundLimits Limits(int64_t max_tokens, int64_t context_size = 1000) {
  RoundLimits limits;
  limits.max_tokens = max_tokens;
  limits.context_size = context_size;
  return limits;
}

TEST(RoundDriverTest, OutputIsTheTargetAlonesWithARightOrWrongDraft) {
  for (int32_t wrong_at : {-1, 0, 2}) {
    ChainTarget target;
    ChainDraft draft;
    draft.wrong_at = wrong_at;
    FixedDraftLength k(4);
    Driven run = Drive(target, &draft, nullptr, k, Limits(30));
    ASSERT_OK(run.result.status());
    EXPECT_EQ(run.tokens, Chain(5, 30)) << "wrong at " << wrong_at;
    EXPECT_EQ(run.result->stop_reason, StopReason::kMaxTokens);
    EXPECT_EQ(run.result->stats.generated_tokens, 30);
    const SpeculationStats& s = run.result->speculation;
    EXPECT_EQ(s.round_tokens, 30);
    EXPECT_EQ(s.accepted, wrong_at < 0 ? s.drafted : s.rounds * wrong_at);
    EXPECT_EQ(s.final_draft_tokens, 4);
    EXPECT_FALSE(s.draft_failed);
  }
}

TEST(RoundDriverTest, KIsLoweredToWhatTheTokenLimitAndTheCacheCanUse) {
  struct Case {
    int64_t max_tokens;
    int64_t context_size;
    std::vector<int32_t> guesses;  // per verify
  };
  const std::vector<Case> cases = {
      {7, 1000, {4, 1}},  // 5 tokens, then room for one more guess and the last token
      {1, 1000, {0}},     // the one token needs no guess
      {20, 7, {4, 0}},    // positions 2..6 after the first round: none left to verify
  };
  for (const Case& c : cases) {
    ChainTarget target;
    ChainDraft draft;
    FixedDraftLength k(4);
    Driven run = Drive(target, &draft, nullptr, k, Limits(c.max_tokens, c.context_size));
    ASSERT_OK(run.result.status());
    EXPECT_EQ(target.guesses_seen, c.guesses) << c.max_tokens << " / " << c.context_size;
  }
}

TEST(RoundDriverTest, AStopIdEndsTheRoundUnreportedAndUncounted) {
  const std::vector<int32_t> chain = Chain(5, 10);
  ChainTarget target;
  ChainDraft draft;
  FixedDraftLength k(4);
  const std::vector<int32_t> stop_ids = {chain[6]};
  RoundLimits limits = Limits(100);
  limits.stop_ids = stop_ids;
  Driven run = Drive(target, &draft, nullptr, k, limits);
  ASSERT_OK(run.result.status());
  EXPECT_EQ(run.result->stop_reason, StopReason::kStopId);
  EXPECT_EQ(run.result->stop_token, chain[6]);
  EXPECT_EQ(run.tokens, std::vector<int32_t>(chain.begin(), chain.begin() + 6));
  EXPECT_EQ(run.result->stats.generated_tokens, 6);
  // The sequence holds the context and what was reported, never the stop id.
  EXPECT_EQ(run.sequence.size(), 2u + 6u);
}

TEST(RoundDriverTest, TheCallersStopRanksBeforeTheLimitAndCutTokensAreNotCounted) {
  for (size_t stop_after : {3u, 5u}) {
    ChainTarget target;
    ChainDraft draft;
    FixedDraftLength k(4);
    // The first round yields 5 tokens and reaches the limit: the callback's stop wins.
    Driven run = Drive(target, &draft, nullptr, k, Limits(5), {}, {}, stop_after);
    ASSERT_OK(run.result.status());
    EXPECT_EQ(run.result->stop_reason, StopReason::kCallback) << stop_after;
    EXPECT_EQ(run.result->stats.generated_tokens, static_cast<int64_t>(stop_after));
    EXPECT_EQ(run.sequence.size(), 2 + stop_after);
  }
}

TEST(RoundDriverTest, AFullCacheEndsTheCallAfterReportingTheLastToken) {
  ChainTarget target;
  FixedDraftLength none(0);
  Driven run = Drive(target, nullptr, nullptr, none, Limits(100, 6));
  ASSERT_OK(run.result.status());
  EXPECT_EQ(run.result->stop_reason, StopReason::kCacheFull);
  // Positions 2..6: the token at position 6 is reported, never run.
  EXPECT_EQ(run.tokens, Chain(5, 5));
}

TEST(RoundDriverTest, AFailedDraftIsAbandonedForTheFallbackWhenDraftsMaySurvive) {
  ChainTarget target;
  ChainDraft draft, fallback;
  draft.fail_on_call = 2;
  fallback.wrong_at = 1;
  FixedDraftLength k(4);
  int dropped = 0;
  RoundEvents events;
  events.draft_dropped = [&](const absl::Status& why) {
    EXPECT_THAT(why, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("draft went away")));
    ++dropped;
  };
  RoundDriverOptions options;
  options.survive_draft_failure = true;
  Driven run = Drive(target, &draft, &fallback, k, Limits(30), options, events);
  ASSERT_OK(run.result.status());
  EXPECT_EQ(run.tokens, Chain(5, 30));
  EXPECT_TRUE(run.result->speculation.draft_failed);
  EXPECT_EQ(dropped, 1);
  EXPECT_TRUE(draft.abandoned);
  EXPECT_EQ(draft.calls, 2);  // never asked again
  EXPECT_GT(fallback.calls, 0);
  // Round 2 went on without guesses; later rounds had the fallback's.
  ASSERT_GE(target.guesses_seen.size(), 3u);
  EXPECT_EQ(target.guesses_seen[0], 4);
  EXPECT_EQ(target.guesses_seen[1], 0);
  EXPECT_EQ(target.guesses_seen[2], 4);
}

// final_draft_tokens reports the k in use at the end, not the configured one.
TEST(RoundDriverTest, FinalDraftTokensIsZeroWhenNoDrafterIsLeft) {
  struct Case {
    const char* name;
    bool draft;
    int fail_on_call;  // of the draft; -1: never
    bool fallback;
    int32_t expected;
  };
  const std::vector<Case> cases = {
      {"draft alive", true, -1, false, 4},
      {"speculation off (no drafter)", false, -1, false, 0},
      {"draft dropped, target alone", true, 2, false, 0},
      {"draft dropped in the first round", true, 1, false, 0},
      {"draft dropped, n-gram fallback guesses on", true, 2, true, 4},
  };
  for (const Case& c : cases) {
    ChainTarget target;
    ChainDraft draft, fallback;
    draft.fail_on_call = c.fail_on_call;
    FixedDraftLength k(4);
    RoundDriverOptions options;
    options.survive_draft_failure = true;
    Driven run = Drive(target, c.draft ? &draft : nullptr, c.fallback ? &fallback : nullptr, k,
                       Limits(30), options);
    ASSERT_OK(run.result.status());
    EXPECT_EQ(run.tokens, Chain(5, 30)) << c.name;
    EXPECT_EQ(run.result->speculation.final_draft_tokens, c.expected) << c.name;
    EXPECT_EQ(run.result->speculation.draft_failed, c.fail_on_call > 0) << c.name;
  }
}

TEST(RoundDriverTest, ADraftFailureEndsTheCallWhenDraftsMayNotFail) {
  ChainTarget target;
  ChainDraft draft;
  draft.fail_on_call = 1;
  FixedDraftLength k(4);
  Driven run = Drive(target, &draft, nullptr, k, Limits(30));
  EXPECT_THAT(run.result, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("draft went away")));
  EXPECT_FALSE(draft.abandoned);
}

TEST(RoundDriverTest, RefusedGuessesAreVerifiedAgainWithoutThemAndTheDraftIsDropped) {
  ChainTarget target;
  target.refuse_guesses = true;
  ChainDraft draft;
  FixedDraftLength k(4);
  RoundDriverOptions options;
  options.survive_draft_failure = true;
  Driven run = Drive(target, &draft, nullptr, k, Limits(6), options);
  ASSERT_OK(run.result.status());
  EXPECT_EQ(run.tokens, Chain(5, 6));
  EXPECT_TRUE(run.result->speculation.draft_failed);
  EXPECT_TRUE(draft.abandoned);
  EXPECT_THAT(target.guesses_seen, ElementsAre(4, 0, 0, 0, 0, 0, 0));
}

TEST(RoundDriverTest, TheTargetContinuesAloneWithinTheTokenLimit) {
  ChainTarget target;
  target.continue_tokens = 3;
  FixedDraftLength none(0);
  std::vector<int32_t> yielded;
  RoundEvents events;
  events.round_done = [&](const RoundReport& r) { yielded.push_back(r.yielded); };
  Driven run = Drive(target, nullptr, nullptr, none, Limits(10), {}, events);
  ASSERT_OK(run.result.status());
  EXPECT_EQ(run.tokens, Chain(5, 10));
  EXPECT_THAT(yielded, ElementsAre(4, 4, 2));  // the last verify may use only 2
}

TEST(RoundDriverTest, AHostileTargetGetsAnInternalError) {
  ChainTarget unasked;
  unasked.extra_continued = 1;
  ChainDraft draft;
  FixedDraftLength k(4);
  EXPECT_THAT(
      Drive(unasked, &draft, nullptr, k, Limits(30)).result,
      StatusIs(absl::StatusCode::kInternal, HasSubstr("target continued 1 tokens unasked")));
  ChainTarget overclaims;
  overclaims.accepted_bonus = 1;
  EXPECT_THAT(Drive(overclaims, &draft, nullptr, k, Limits(30)).result,
              StatusIs(absl::StatusCode::kInternal, HasSubstr("target accepted 5 of 4 guesses")));
}

// A prefill that finishes only once `other` has started its own (2 s at most).
absl::Status AwaitPrefill(const std::atomic<bool>& other) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!other && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return other ? absl::OkStatus() : absl::DeadlineExceededError("the other prefill never started");
}

TEST(RoundDriverTest, BothPrefillsStartBeforeEitherIsWaitedFor) {
  for (bool draft_waits : {false, true}) {
    ChainTarget target;
    ChainDraft draft;
    if (draft_waits) {
      draft.before_prefill = [&target] { return AwaitPrefill(target.prefilled); };
    } else {
      target.before_prefill = [&draft] { return AwaitPrefill(draft.prefilled); };
    }
    FixedDraftLength k(4);
    RoundDriverOptions options;
    options.survive_draft_failure = true;
    Driven run = Drive(target, &draft, nullptr, k, Limits(4), options);
    ASSERT_OK(run.result.status()) << "draft waits " << draft_waits;
    EXPECT_FALSE(run.result->speculation.draft_failed) << "draft waits " << draft_waits;
    EXPECT_EQ(run.tokens, Chain(5, 4));
  }
}

// Every round reaches the policy, and k follows it.
class ScriptedLength : public DraftLengthPolicy {
 public:
  int32_t Next() const override { return next_; }
  void Observe(const RoundReport& round) override {
    rounds.push_back(round);
    next_ = next_ == 1 ? 3 : 1;
  }
  void Report(SpeculationStats& stats) const override {
    stats.cost_model.emplace().chosen_k = static_cast<int32_t>(rounds.size());
  }
  std::vector<RoundReport> rounds;

 private:
  int32_t next_ = 1;
};

TEST(RoundDriverTest, ThePolicyChoosesEachRoundsKAndSeesEveryRound) {
  ChainTarget target;
  ChainDraft draft;
  draft.wrong_at = 2;
  ScriptedLength policy;
  Driven run = Drive(target, &draft, nullptr, policy, Limits(12));
  ASSERT_OK(run.result.status());
  EXPECT_THAT(target.guesses_seen, ElementsAre(1, 3, 1, 3, 1));
  ASSERT_EQ(policy.rounds.size(), 5u);
  EXPECT_EQ(policy.rounds[1].asked, 3);
  EXPECT_EQ(policy.rounds[1].drafted, 3);
  EXPECT_EQ(policy.rounds[1].accepted, 2);
  EXPECT_EQ(policy.rounds[1].yielded, 3);
  EXPECT_GE(policy.rounds[1].verify_seconds, 0);
}

// The cost model's inputs: each call's compute seconds as its backend reported them (a worker's
// reply, or the thread's CPU time), beside the driver's wall clock; a round without guesses
// has no draft time. The policy's own statistics reach the result.
TEST(RoundDriverTest, ThePolicySeesTheBackendsComputeSecondsAndReportsAtTheEnd) {
  ChainTarget target;
  target.compute_seconds = 2e-3;
  ChainDraft draft;
  draft.compute_seconds = 1e-3;
  ScriptedLength policy;
  Driven run = Drive(target, &draft, nullptr, policy, Limits(12));
  ASSERT_OK(run.result.status());
  ASSERT_EQ(policy.rounds.size(), 4u);  // 2, 4, 2 and 4 tokens
  double rounds_seconds = 0;
  for (const RoundReport& round : policy.rounds) {
    EXPECT_EQ(round.draft_compute_seconds, 1e-3);
    EXPECT_EQ(round.verify_compute_seconds, 2e-3);
    // A round's wall time covers its calls; the rounds tile the decode.
    EXPECT_GE(round.round_seconds, round.draft_seconds + round.verify_seconds);
    rounds_seconds += round.round_seconds;
  }
  EXPECT_LE(rounds_seconds, run.result->stats.decode_seconds);
  ASSERT_TRUE(run.result->speculation.cost_model.has_value());
  EXPECT_EQ(run.result->speculation.cost_model->chosen_k, 4);

  FixedDraftLength none(0);
  ChainTarget alone;
  alone.compute_seconds = 2e-3;
  std::vector<RoundReport> rounds;
  RoundEvents events;
  events.round_done = [&](const RoundReport& r) { rounds.push_back(r); };
  ASSERT_OK(Drive(alone, &draft, nullptr, none, Limits(2), {}, events).result.status());
  ASSERT_EQ(rounds.size(), 2u);
  EXPECT_EQ(rounds[0].draft_compute_seconds, 0);
  EXPECT_EQ(rounds[0].draft_seconds, 0);
  EXPECT_EQ(rounds[0].verify_compute_seconds, 2e-3);
}

RoundDriverOptions Pipelined(bool survive = false) {
  RoundDriverOptions options;
  options.pipelined = true;
  options.survive_draft_failure = survive;
  return options;
}

TEST(RoundDriverTest, PipelinedRoundsUseTheGuessesDraftedDuringTheVerify) {
  struct Case {
    int64_t max_tokens;
    std::vector<int32_t> guesses;  // per verify
    std::vector<int32_t> asked;    // per draft call: each asks for the stand-in too
    int64_t ahead, predrafted;
  };
  const std::vector<Case> cases = {
      // Six rounds of 4 kept guesses and the next token; the last has no room for a next one,
      // so no call runs ahead of it.
      {30, {4, 4, 4, 4, 4, 4}, {5, 5, 5, 5, 5, 5}, 5, 5},
      // Round 2 drafts ahead for the one guess the last round has room for.
      {12, {4, 4, 1}, {5, 5, 2}, 2, 2},
  };
  for (const Case& c : cases) {
    ChainTarget target;
    ChainDraft draft;
    FixedDraftLength k(4);
    Driven run = Drive(target, &draft, nullptr, k, Limits(c.max_tokens), Pipelined());
    ASSERT_OK(run.result.status());
    EXPECT_EQ(run.tokens, Chain(5, static_cast<int>(c.max_tokens)));
    EXPECT_EQ(target.guesses_seen, c.guesses) << c.max_tokens;
    EXPECT_EQ(draft.asked, c.asked) << c.max_tokens;
    const SpeculationStats& s = run.result->speculation;
    EXPECT_TRUE(s.pipelined);
    EXPECT_EQ(s.ahead_drafts, c.ahead) << c.max_tokens;
    EXPECT_EQ(s.predrafted_rounds, c.predrafted) << c.max_tokens;
    EXPECT_EQ(s.accepted, s.drafted) << c.max_tokens;
  }
}

TEST(RoundDriverTest, PipelinedGuessesAreDroppedWhenTheVerifyDiffersFromTheDraftsForesight) {
  struct Case {
    const char* name;
    int32_t wrong_at;  // the guess the draft gets wrong; 4 = the stand-in
  };
  for (const Case& c : {Case{"a rejected guess", 2}, Case{"a wrong stand-in", 4}}) {
    ChainTarget target;
    ChainDraft draft;
    draft.wrong_at = c.wrong_at;
    FixedDraftLength k(4);
    Driven run = Drive(target, &draft, nullptr, k, Limits(30), Pipelined());
    ASSERT_OK(run.result.status()) << c.name;
    EXPECT_EQ(run.tokens, Chain(5, 30)) << c.name;
    const SpeculationStats& s = run.result->speculation;
    EXPECT_EQ(s.predrafted_rounds, 0) << c.name;
    EXPECT_GT(s.ahead_drafts, 0) << c.name;
    // Every round drafted afresh, and one call ran ahead of each round but the last.
    EXPECT_EQ(draft.calls, s.rounds + s.ahead_drafts) << c.name;
    EXPECT_EQ(s.accepted, s.rounds * std::min(c.wrong_at, 4)) << c.name;
  }
}

TEST(RoundDriverTest, AFailedAheadDraftIsDroppedAndTheRoundStands) {
  ChainTarget target;
  ChainDraft draft, fallback;
  draft.fail_on_call = 2;  // the first call ahead
  FixedDraftLength k(4);
  Driven run = Drive(target, &draft, &fallback, k, Limits(30), Pipelined(/*survive=*/true));
  ASSERT_OK(run.result.status());
  EXPECT_EQ(run.tokens, Chain(5, 30));
  EXPECT_TRUE(run.result->speculation.draft_failed);
  EXPECT_TRUE(draft.abandoned);
  EXPECT_EQ(draft.calls, 2);
  // Round 1 kept its 4 guesses; round 2 drafted afresh on the fallback.
  ASSERT_GE(target.guesses_seen.size(), 2u);
  EXPECT_EQ(target.guesses_seen[0], 4);
  EXPECT_EQ(target.guesses_seen[1], 4);
  EXPECT_GT(fallback.calls, 0);
}

TEST(RoundDriverTest, PipelinedRoundsReportTheComputeOfTheGuessesTestedNotTheStandIn) {
  ChainTarget target;
  ChainDraft draft;
  draft.compute_seconds = 5e-3;  // each call: 4 guesses and the stand-in
  FixedDraftLength k(4);
  std::vector<RoundReport> rounds;
  RoundEvents events;
  events.round_done = [&](const RoundReport& r) { rounds.push_back(r); };
  ASSERT_OK(Drive(target, &draft, nullptr, k, Limits(30), Pipelined(), events).result.status());
  ASSERT_EQ(rounds.size(), 6u);
  for (const RoundReport& round : rounds) {
    EXPECT_DOUBLE_EQ(round.draft_compute_seconds, 4e-3);
    EXPECT_GE(round.draft_seconds, 0);
  }
}

// What the cost model learns the stand-in's acceptance from: tested only when every guess
// was kept, right when the target's next token is the draft's stand-in.
TEST(RoundDriverTest, PipelinedRoundsReportWhetherTheStandInWasTestedAndRight) {
  struct Case {
    const char* name;
    bool pipelined;
    int32_t wrong_at;  // as ChainDraft's; 4 = the stand-in, -1 = never
    bool tested, kept;
  };
  const std::vector<Case> cases = {{"all right", true, -1, true, true},
                                   {"a wrong stand-in", true, 4, true, false},
                                   {"a rejected guess", true, 2, false, false},
                                   {"sequential rounds have no stand-in", false, -1, false, false}};
  for (const Case& c : cases) {
    ChainTarget target;
    ChainDraft draft;
    draft.wrong_at = c.wrong_at;
    FixedDraftLength k(4);
    std::vector<RoundReport> rounds;
    RoundEvents events;
    events.round_done = [&](const RoundReport& r) { rounds.push_back(r); };
    const RoundDriverOptions options = c.pipelined ? Pipelined() : RoundDriverOptions{};
    ASSERT_OK(Drive(target, &draft, nullptr, k, Limits(30), options, events).result.status());
    ASSERT_GE(rounds.size(), 2u) << c.name;
    EXPECT_EQ(rounds[0].standin_tested, c.tested) << c.name;
    EXPECT_EQ(rounds[0].standin_kept, c.kept) << c.name;
  }
}

TEST(RoundDriverTest, TheNextRoundsDraftRunsWhileTheTargetVerifies) {
  // The first verify finishes only once the call ahead of it has started on its own thread.
  ChainTarget target;
  ChainDraft draft;
  draft.asynchronous = true;
  target.before_verify = [&draft] { return AwaitPrefill(draft.later_call_started); };
  FixedDraftLength k(4);
  Driven run = Drive(target, &draft, nullptr, k, Limits(10), Pipelined());
  ASSERT_OK(run.result.status());
  EXPECT_EQ(run.tokens, Chain(5, 10));
  EXPECT_EQ(run.result->speculation.predrafted_rounds, 1);
  // Without pipelining no draft call runs during a verify: the verify gives up.
  ChainTarget sequential;
  ChainDraft alone;
  alone.asynchronous = true;
  sequential.before_verify = [&alone] { return AwaitPrefill(alone.later_call_started); };
  EXPECT_THAT(Drive(sequential, &alone, nullptr, k, Limits(10)).result,
              StatusIs(absl::StatusCode::kDeadlineExceeded));
}

// --- Forced tokens: free guesses where the constraint allows one token ----------------------

// A constraint over Drive's output (after the context {1, 5}) that allows only the chain's next
// token where `forced(n)` holds for the output's length n, nothing where `dead(n)` holds, and
// any token elsewhere.
std::unique_ptr<testing::RuleConstraint> ChainConstraint(std::function<bool(int64_t)> forced,
                                                         std::function<bool(int64_t)> dead = {}) {
  return std::make_unique<testing::RuleConstraint>(
      200, [forced, dead](absl::Span<const int32_t> output, int32_t token) {
        const int64_t n = static_cast<int64_t>(output.size());
        if (dead && dead(n)) return false;
        return !forced(n) || token == Next(output.empty() ? 5 : output.back());
      });
}

RoundDriverOptions Forcing(testing::RuleConstraint& constraint, bool pipelined = false) {
  RoundDriverOptions options;
  options.forced_tokens = &constraint;
  options.pipelined = pipelined;
  return options;
}

TEST(RoundDriverForcedTest, ForcedTokensAreGuessedBeforeTheDraftsWhichIsAskedForTheRest) {
  auto constraint = ChainConstraint([](int64_t n) { return n % 3 == 0; });
  ChainTarget target;
  ChainDraft draft;
  FixedDraftLength k(4);
  Driven run = Drive(target, &draft, nullptr, k, Limits(30), Forcing(*constraint));
  ASSERT_OK(run.result.status());
  EXPECT_EQ(run.tokens, Chain(5, 30));
  // Rounds start at outputs of 0, 5, ..., 25 tokens: those at 0 and 15 have one forced token.
  EXPECT_EQ(target.guesses_seen, std::vector<int32_t>(6, 4));
  EXPECT_THAT(draft.asked, ElementsAre(3, 4, 4, 3, 4, 4));
  const SpeculationStats& s = run.result->speculation;
  EXPECT_EQ(s.forced, 2);
  EXPECT_EQ(s.forced_accepted, 2);
  EXPECT_EQ(s.drafted, 22);  // the draft's guesses only
  EXPECT_EQ(s.accepted, 22);
  EXPECT_EQ(s.round_tokens, 30);
}

TEST(RoundDriverForcedTest, ARoundTheForcedTokensFillMakesNoDraftCall) {
  for (bool with_draft : {true, false}) {
    auto constraint = ChainConstraint([](int64_t) { return true; });
    ChainTarget target;
    ChainDraft draft;
    FixedDraftLength k(4);
    Driven run = Drive(target, with_draft ? &draft : nullptr, nullptr, k, Limits(30),
                       Forcing(*constraint, /*pipelined=*/with_draft));
    ASSERT_OK(run.result.status());
    EXPECT_EQ(run.tokens, Chain(5, 30));
    EXPECT_EQ(target.guesses_seen, std::vector<int32_t>(6, 4));
    EXPECT_EQ(draft.calls, 0);
    const SpeculationStats& s = run.result->speculation;
    EXPECT_EQ(s.forced, 24);
    EXPECT_EQ(s.forced_accepted, 24);
    EXPECT_EQ(s.drafted, 0);
    EXPECT_EQ(s.rounds, 6);
  }
}

// The next round's forced tokens are found before its guesses are drafted ahead: the target
// sees exactly the sequential rounds' guesses.
TEST(RoundDriverForcedTest, PipelinedRoundsWithForcedTokensAreTheSequentialRounds) {
  auto constraint = ChainConstraint([](int64_t n) { return n % 3 == 0; });
  ChainTarget target;
  ChainDraft draft;
  FixedDraftLength k(4);
  Driven run = Drive(target, &draft, nullptr, k, Limits(30), Forcing(*constraint, true));
  ASSERT_OK(run.result.status());
  EXPECT_EQ(run.tokens, Chain(5, 30));
  EXPECT_EQ(target.guesses_seen, std::vector<int32_t>(6, 4));
  // Each call asks for the stand-in too; the rounds at 0 and 15 had a forced token.
  EXPECT_THAT(draft.asked, ElementsAre(4, 5, 5, 4, 5, 5));
  const SpeculationStats& s = run.result->speculation;
  EXPECT_EQ(s.predrafted_rounds, 5);
  EXPECT_EQ(s.forced, 2);
  EXPECT_EQ(s.forced_accepted, 2);
}

TEST(RoundDriverForcedTest, AForcedStopIdEndsTheGuesses) {
  const std::vector<int32_t> chain = Chain(5, 10);
  auto constraint = ChainConstraint([](int64_t n) { return n == 3; });
  ChainTarget target;
  ChainDraft draft;
  FixedDraftLength k(2);
  const std::vector<int32_t> stop_ids = {chain[3]};
  RoundLimits limits = Limits(100);
  limits.stop_ids = stop_ids;
  Driven run = Drive(target, &draft, nullptr, k, limits, Forcing(*constraint));
  ASSERT_OK(run.result.status());
  EXPECT_EQ(run.result->stop_reason, StopReason::kStopId);
  EXPECT_EQ(run.tokens, std::vector<int32_t>(chain.begin(), chain.begin() + 3));
  EXPECT_THAT(target.guesses_seen, ElementsAre(2, 1));
  EXPECT_EQ(draft.calls, 1);  // none after the forced stop id
  EXPECT_EQ(run.result->speculation.forced, 1);
}

TEST(RoundDriverForcedTest, ADeadEndRightAfterTheSequenceEndsTheCallBeforeAnyGuess) {
  auto constraint =
      ChainConstraint([](int64_t) { return false; }, [](int64_t n) { return n == 0; });
  ChainTarget target;
  ChainDraft draft;
  FixedDraftLength k(4);
  Driven run = Drive(target, &draft, nullptr, k, Limits(30), Forcing(*constraint));
  EXPECT_THAT(run.result, StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("the constraint allows no token after 0 generated")));
  EXPECT_EQ(draft.calls, 0);
  EXPECT_TRUE(target.guesses_seen.empty());
}

// The prediction: the target's own output after the sequence {1, 5} (output from index 2),
// with `edits` replaced by 0 (a token the chain never produces).
std::vector<int32_t> EditedPrediction(int n, const std::vector<int>& edits) {
  std::vector<int32_t> prediction = Chain(5, n);
  for (int i : edits) prediction[i] = 0;
  return prediction;
}

TEST(RoundDriverPredictedTest, AnExactPredictionIsGuessedWithoutDraftCalls) {
  for (bool pipelined : {false, true}) {
    ChainTarget target;
    ChainDraft draft;
    FixedDraftLength k(4);
    PredictionDrafter prediction(EditedPrediction(40, {}), 2);
    PredictionLengthOptions fixed;
    fixed.fixed_tokens = 8;
    PredictionLengthPolicy policy(fixed);
    RoundDriverOptions options;
    options.pipelined = pipelined;
    options.prediction = &prediction;
    options.prediction_policy = &policy;
    Driven run = Drive(target, &draft, nullptr, k, Limits(30), options);
    ASSERT_OK(run.result.status());
    EXPECT_EQ(run.tokens, Chain(5, 30));
    EXPECT_EQ(draft.calls, 0);
    // 9 tokens a round: 8 predicted and the target's; the last round has room for 2.
    EXPECT_THAT(target.guesses_seen, ElementsAre(8, 8, 8, 2));
    const SpeculationStats& s = run.result->speculation;
    EXPECT_EQ(s.predicted, 26);
    EXPECT_EQ(s.predicted_accepted, 26);
    EXPECT_EQ(s.predicted_rounds, 4);
    EXPECT_EQ(s.drafted, 0);
    EXPECT_EQ(s.round_tokens, 30);
  }
}

TEST(RoundDriverPredictedTest, AnEditCutsTheRoundAndThePredictionGoesOnAfterIt) {
  ChainTarget target;
  FixedDraftLength k(4);
  PredictionDrafter prediction(EditedPrediction(40, {5, 17}), 2);
  PredictionLengthOptions fixed;
  fixed.fixed_tokens = 8;
  PredictionLengthPolicy policy(fixed);
  RoundDriverOptions options;
  options.prediction = &prediction;
  options.prediction_policy = &policy;
  Driven run = Drive(target, nullptr, nullptr, k, Limits(30), options);
  ASSERT_OK(run.result.status());
  EXPECT_EQ(run.tokens, Chain(5, 30));
  // Rounds at outputs 0 (5 kept, the 6th edited: the target's), 6 (right after an edit: at
  // most after_edit = 4 guesses, kept), 11 (6 kept, the edit at 17), 18 (4), 23 (room for 6).
  EXPECT_THAT(target.guesses_seen, ElementsAre(8, 4, 8, 4, 6));
  const SpeculationStats& s = run.result->speculation;
  EXPECT_EQ(s.predicted, 30);
  EXPECT_EQ(s.predicted_accepted, 25);
}

TEST(RoundDriverPredictedTest, WhereThePredictionHasNothingTheDraftGuesses) {
  ChainTarget target;
  ChainDraft draft;
  FixedDraftLength k(4);
  // Predicts the first 10 tokens only.
  PredictionDrafter prediction(EditedPrediction(10, {}), 2);
  PredictionLengthPolicy policy;
  RoundDriverOptions options;
  options.prediction = &prediction;
  options.prediction_policy = &policy;
  Driven run = Drive(target, &draft, nullptr, k, Limits(30), options);
  ASSERT_OK(run.result.status());
  EXPECT_EQ(run.tokens, Chain(5, 30));
  const SpeculationStats& s = run.result->speculation;
  // The first round keeps 8 of the 10 and the target makes the 9th; the 10th is kept.
  EXPECT_EQ(s.predicted_accepted, 9);
  EXPECT_GT(draft.calls, 0);
  EXPECT_EQ(s.accepted, s.drafted);
  EXPECT_EQ(s.round_tokens, 30);
}

TEST(RoundDriverPredictedTest, AnUnrelatedPredictionChangesNoOutput) {
  ChainTarget target;
  FixedDraftLength k(0);
  std::vector<int32_t> unrelated = Chain(77, 40);
  PredictionDrafter prediction(unrelated, 2);
  PredictionLengthPolicy policy;
  RoundDriverOptions options;
  options.prediction = &prediction;
  options.prediction_policy = &policy;
  Driven run = Drive(target, nullptr, nullptr, k, Limits(30), options);
  ASSERT_OK(run.result.status());
  EXPECT_EQ(run.tokens, Chain(5, 30));
}

TEST(FixedDraftLengthTest, RoundsDoNotChangeK) {
  struct Case {
    int32_t k, drafted, accepted;
  };
  const std::vector<Case> cases = {{4, 4, 4}, {4, 4, 1}, {4, 2, 0}, {0, 0, 0}};
  for (const Case& c : cases) {
    FixedDraftLength policy(c.k);
    RoundReport round;
    round.drafted = c.drafted;
    round.accepted = c.accepted;
    policy.Observe(round);
    EXPECT_EQ(policy.Next(), c.k) << c.k << " " << c.drafted << " " << c.accepted;
  }
}

}  // namespace
}  // namespace tandem
