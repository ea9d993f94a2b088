#include "core/generation/draft_cost_model.h"

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/generation/generation_result.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

constexpr double kMs = 1e-3;

DraftCostEstimates Estimates(double acceptance, double draft_ms, double verify_base_ms,
                             double verify_row_ms, double alone_ms, double overhead_ms = 0) {
  DraftCostEstimates e;
  e.acceptance.assign(17, acceptance);
  e.draft_token_seconds = draft_ms * kMs;
  e.draft_overhead_seconds = overhead_ms * kMs;
  e.verify_base_seconds = verify_base_ms * kMs;
  e.verify_row_seconds = verify_row_ms * kMs;
  e.verify_overhead_seconds = overhead_ms * kMs;
  e.alone_token_seconds = alone_ms * kMs;
  return e;
}

// A round whose calls took `draft_s` and `verify_s`, all of it compute.
RoundReport Round(int32_t drafted, int32_t accepted, int32_t yielded, double draft_s,
                  double verify_s) {
  RoundReport r;
  r.asked = r.drafted = drafted;
  r.accepted = accepted;
  r.yielded = yielded;
  r.draft_seconds = r.draft_compute_seconds = draft_s;
  r.verify_seconds = r.verify_compute_seconds = verify_s;
  return r;
}

struct ChoiceCase {
  std::string name;
  DraftCostEstimates estimates;
  int32_t sequential_k;
};

TEST(DraftCostModelTest, ChoosesTheKWithTheMostTokensPerSecond) {
  const std::vector<ChoiceCase> cases = {
      // rate(1) = 1.3 / 2.5 ms < 1 / 1 ms.
      {"expensive verify, low acceptance: target alone", Estimates(0.3, 0.5, 0, 1, 1), 0},
      // E(k) = k + 1 over 1.01 + 0.06 k ms grows with k.
      {"all kept, cheap verify and draft: the most", Estimates(1.0, 0.05, 1, 0.01, 1.01), 16},
      // E(k) = (1 - 0.8^(k+1)) / 0.2 over 1.1 + 0.2 k ms peaks at k = 4 (1.769 vs 1.757 at 5).
      {"moderate: in between", Estimates(0.8, 0.1, 1, 0.1, 1.1), 4},
      // 2 ms more per call each way: at k = 4, 3.36 tokens / 5.9 ms < 1 / 1.1 ms.
      {"a round trip the target alone amortises", Estimates(0.8, 0.1, 1, 0.1, 1.1, 2), 0},
      // In-process on the tiny pair a draft step costs what a target step does: even all
      // kept, (k + 1) / (1.4 k + 1) ms < 1 / 1 ms.
      {"a draft as costly as the target, all kept: target alone", Estimates(1.0, 1, 0.6, 0.4, 1),
       0},
      // The n-gram drafter's guesses cost nothing: E(k) / (1 + 0.02 (k + 1)) ms peaks at 8.
      {"free guesses, cheap rows: long k at a = 0.7", Estimates(0.7, 0, 1, 0.02, 1.02), 8},
      // The tiny pair through the processes (estimates measured by speculation_bench.py):
      // 0.26 ms a call each way, verify 0.546 + 0.045 ms a row, alone 0.52 ms a token.
      {"the tiny pair distributed", Estimates(0.85, 0.076, 0.546, 0.045, 0.52, 0.26), 7},
  };
  for (const ChoiceCase& c : cases) {
    EXPECT_EQ(BestDraftTokens(c.estimates, 0, 16, /*pipelined=*/false), c.sequential_k) << c.name;
  }
}

TEST(DraftCostModelTest, FormulasMatchHandComputedRates) {
  // a = 0.9, d = 1 ms, v = 4 ms: E(2) = 2.71; sequential 2.71 / 6 ms; pipelined with
  // h = 0.9^3 = 0.729 and D(3) = 3 ms: 2.71 / (max(3, 4) + 0.271 * 3) ms.
  const DraftCostEstimates e = Estimates(0.9, 1, 4, 0, 4);
  EXPECT_NEAR(ExpectedRoundTokens(e, 2), 2.71, 1e-12);
  EXPECT_NEAR(SequentialTokensPerSecond(e, 2), 2.71 / 6e-3, 1e-6);
  EXPECT_NEAR(PipelinedTokensPerSecond(e, 2), 2.71 / 4.813e-3, 1e-6);
  EXPECT_NEAR(SequentialTokensPerSecond(e, 0), 250, 1e-9);
  // Hiding the draft behind the verify pays while the draft's guesses take no longer than
  // the verify ((k + 1) d <= v: k <= 3), and most at the edge; past it the draft's call,
  // waited for and mostly wasted, costs more than it hides.
  for (int32_t k = 1; k <= 3; ++k) {
    EXPECT_GT(PipelinedTokensPerSecond(e, k), SequentialTokensPerSecond(e, k)) << k;
  }
  EXPECT_LT(PipelinedTokensPerSecond(e, 16), SequentialTokensPerSecond(e, 16));
  EXPECT_EQ(BestDraftTokens(e, 0, 16, /*pipelined=*/true), 3);
  EXPECT_EQ(BestDraftTokens(e, 0, 16, /*pipelined=*/false), 6);
}

// Rounds of a synthetic pair: each guess kept with probability `acceptance` (fixed seed),
// the draft taking draft_ms per guess and a verify of r rows verify_base_ms + r verify_row_ms.
struct Pair {
  double acceptance, draft_ms, verify_base_ms, verify_row_ms;
};

// Runs `rounds` rounds at the model's k; returns how many asked for guesses. With
// `standins`, rounds are pipelined: one whose guesses were all kept tests the stand-in too.
int RunRounds(DraftCostModel& model, const Pair& pair, int rounds, std::mt19937& rng,
              bool standins = false) {
  std::bernoulli_distribution kept(pair.acceptance);
  int speculative = 0;
  for (int i = 0; i < rounds; ++i) {
    const int32_t k = model.Next();
    int32_t accepted = 0;
    while (accepted < k && kept(rng)) ++accepted;
    speculative += k > 0 ? 1 : 0;
    RoundReport round = Round(k, accepted, accepted + 1, k * pair.draft_ms * kMs,
                              (pair.verify_base_ms + (k + 1) * pair.verify_row_ms) * kMs);
    round.standin_tested = standins && k > 0 && accepted == k;
    round.standin_kept = round.standin_tested && kept(rng);
    model.Observe(round);
  }
  return speculative;
}

// Guessing would pay were most guesses kept (d small against t0 = 1.2 ms), but 1 in 10 is.
constexpr Pair kRarelyKept{0.1, 0.2, 1, 0.2};

TEST(DraftCostModelTest, LearnsToRunTheTargetAloneWhenGuessingDoesNotPay) {
  DraftCostOptions options;
  DraftCostModel model(options, 4);
  std::mt19937 rng(7);
  RunRounds(model, kRarelyKept, 40, rng);
  EXPECT_EQ(model.Next(), 0);
  // Only the probes guess: two rounds after probe_after_rounds at k = 0, then after twice
  // as many, ... up to 8 times as many.
  const int first = RunRounds(model, kRarelyKept, 180, rng);
  EXPECT_GE(first, 2);
  EXPECT_LE(first, 2 * 180 / (options.probe_after_rounds + 2) + 2);
  const int later = RunRounds(model, kRarelyKept, 1300, rng);
  EXPECT_GE(later, 2 * 1300 / (8 * options.probe_after_rounds + 2) - 2);
  EXPECT_LE(later, 2 * 1300 / (8 * options.probe_after_rounds + 2) + 4);
}

// In-process a probe's catch-up costs a fixed share of the time since the last one: after one
// probe finds guessing still not paying, none; remote, probes go on at growing intervals.
TEST(DraftCostModelTest, InProcessProbesOnceAfterGuessingStopsPaying) {
  for (const bool compute_only : {false, true}) {
    SCOPED_TRACE(compute_only ? "compute_only" : "remote");
    DraftCostOptions options;
    options.compute_only = compute_only;
    DraftCostModel model(options, 4);
    std::mt19937 rng(7);
    // The caller's k, the target alone, k = 0 chosen, then the first probe (two rounds) after
    // probe_after_rounds at k = 0.
    EXPECT_EQ(RunRounds(model, kRarelyKept, options.probe_after_rounds + 6, rng), 3);
    ASSERT_EQ(model.Next(), 0);
    const int later = RunRounds(model, kRarelyKept, 1300, rng);
    if (compute_only) {
      EXPECT_EQ(later, 0);
    } else {
      EXPECT_GE(later, 2 * 1300 / (8 * options.probe_after_rounds + 2));
    }
  }
}

// A draft half the target's cost whose every guess kept would gain 10 %: remote, probes run;
// in-process the draft's catch-up on the missed tokens (up to d / t0 = 50 % of their time)
// could not be repaid, so none.
TEST(DraftCostModelTest, InProcessSkipsAProbeThatCannotRepayTheDraftsCatchUp) {
  const Pair pair{0.75, 0.5, 0.6, 0.4};
  for (const bool compute_only : {false, true}) {
    SCOPED_TRACE(compute_only ? "compute_only" : "remote");
    DraftCostOptions options;
    options.compute_only = compute_only;
    DraftCostModel model(options, 4);
    std::mt19937 rng(17);
    RunRounds(model, pair, 3, rng);
    ASSERT_EQ(model.Next(), 0);
    const DraftCostEstimates e = model.Estimates();
    EXPECT_TRUE(GuessingCanPay(e, options.max_draft_tokens, false));
    EXPECT_FALSE(GuessingCanPay(e, options.max_draft_tokens, false, 0.5));
    EXPECT_EQ(RunRounds(model, pair, 200, rng) > 0, !compute_only);
  }
}

struct HopelessCase {
  std::string name;
  Pair pair;
};

// When no acceptance could pay (the draft's guess costs about a target step), probing
// acceptance again only loses time: the first round guesses (the caller's k), then only the
// probes 8 probe intervals apart, in case the timings change; in-process (compute_only),
// where both halves' costs move together, none.
TEST(DraftCostModelTest, ProbesOnlyAtTheLongestIntervalWhenEvenAllKeptCannotPay) {
  const std::vector<HopelessCase> cases = {
      {"in-process tiny pair: a guess costs a target step", {0.75, 1, 0.6, 0.4}},
      {"all kept, a draft slower than the target", {1.0, 2, 1, 0.1}},
  };
  for (const HopelessCase& c : cases) {
    for (const bool compute_only : {false, true}) {
      SCOPED_TRACE(c.name + (compute_only ? ", compute_only" : ", remote"));
      DraftCostOptions options;
      options.compute_only = compute_only;
      DraftCostModel model(options, 4);
      std::mt19937 rng(13);
      const int32_t longest = 8 * options.probe_after_rounds;
      EXPECT_EQ(RunRounds(model, c.pair, longest, rng), 1);
      EXPECT_EQ(model.Next(), 0);
      EXPECT_FALSE(GuessingCanPay(model.Estimates(), options.max_draft_tokens, false));
      // Remote, the longest interval's probe still runs: two rounds, then the target alone.
      EXPECT_EQ(RunRounds(model, c.pair, 4 * longest, rng), compute_only ? 0 : 8);
      EXPECT_EQ(model.Next(), 0);
    }
  }
}

struct CanPayCase {
  std::string name;
  DraftCostEstimates estimates;
  bool sequential, pipelined;
};

TEST(DraftCostModelTest, GuessingCanPayWhenAllKeptWouldBeatTheTargetAlone) {
  const std::vector<CanPayCase> cases = {
      // Whatever a: all kept, 17 tokens / 10.7 ms at k = 16 > 1 / 1.1 ms.
      {"a cheap draft, nothing kept yet", Estimates(0.0, 0.5, 1, 0.1, 1.1), true, true},
      // Sequential (k + 1) / (1.4 k + 1) ms < 1 / 1 ms; pipelined the draft's k ms hide the
      // verify: (k + 1) / k ms.
      {"a draft as costly as the target", Estimates(0.0, 1, 0.6, 0.4, 1), false, true},
      // 20 ms each way: 17 tokens / 22.7 ms even pipelined.
      {"a round trip the target alone amortises", Estimates(0.0, 0.1, 1, 0.1, 1.1, 20), false,
       false},
  };
  for (const CanPayCase& c : cases) {
    EXPECT_EQ(GuessingCanPay(c.estimates, 16, /*pipelined=*/false), c.sequential) << c.name;
    EXPECT_EQ(GuessingCanPay(c.estimates, 16, /*pipelined=*/true), c.pipelined) << c.name;
  }
}

TEST(DraftCostModelTest, GrowsKWhenAllIsKeptAndVerifyIsCheap) {
  DraftCostOptions options;
  options.max_draft_tokens = 12;
  DraftCostModel model(options, 2);
  std::mt19937 rng(7);
  RunRounds(model, {1.0, 0.05, 1, 0.01}, 60, rng);
  EXPECT_EQ(model.Next(), 12);
  const DraftCostEstimates e = model.Estimates();
  EXPECT_EQ(e.chosen_k, 12);
  EXPECT_NEAR(e.acceptance[0], 1.0, 0.01);
  EXPECT_NEAR(e.draft_token_seconds, 0.05 * kMs, 1e-9);
  EXPECT_NEAR(e.verify_base_seconds, 1 * kMs, 1e-9);
  EXPECT_NEAR(e.verify_row_seconds, 0.01 * kMs, 1e-9);
  EXPECT_NEAR(e.alone_token_seconds, 1.01 * kMs, 1e-9);
  // 13 tokens a round, but for what is left of the prior on a.
  const double rate = 13 / (1.01e-3 + 0.06e-3 * 12);
  EXPECT_NEAR(e.predicted_tokens_per_second, rate, 1e-3 * rate);
}

TEST(DraftCostModelTest, SettlesNearTheBestKForModerateAcceptance) {
  DraftCostModel model(DraftCostOptions{}, 1);
  std::mt19937 rng(11);
  RunRounds(model, {0.8, 0.1, 1, 0.1}, 300, rng);
  // The best k for the true a = 0.8 is 4; the decayed estimate of a wanders around it.
  EXPECT_GE(model.Next(), 2);
  EXPECT_LE(model.Next(), 7);
}

TEST(DraftCostModelTest, ReprobesAfterTargetAloneAndResumesWhenTheDraftImproves) {
  DraftCostOptions options;
  DraftCostModel model(options, 4);
  std::mt19937 rng(3);
  RunRounds(model, {0.0, 0.5, 1, 0.1}, 50, rng);
  ASSERT_EQ(model.Next(), 0);
  // The draft now agrees with the target: within a probe interval and a few rounds of
  // learning, guesses come back and grow.
  RunRounds(model, {1.0, 0.05, 1, 0.01}, options.probe_after_rounds + 40, rng);
  EXPECT_GE(model.Next(), 8);
}

TEST(DraftCostModelTest, OnePreemptedRoundDoesNotSwampTheEstimates) {
  DraftCostModel model(DraftCostOptions{}, 4);
  std::mt19937 rng(5);
  const Pair pair{0.8, 0.1, 1, 0.1};
  RunRounds(model, pair, 100, rng);
  const int32_t k = model.Next();
  ASSERT_GT(k, 0);
  model.Observe(Round(k, k, k + 1, 50e-3, 60e-3));
  const DraftCostEstimates e = model.Estimates();
  // Counted as twice the estimate: d moves by at most (1 - decay) of it.
  EXPECT_LT(e.draft_token_seconds, 1.25 * 0.1 * kMs);
  EXPECT_GT(model.Next(), 0);
}

// The first round of a probe also runs the tokens the draft missed while idle: its time says
// nothing about a guess's cost; the second round's does.
TEST(DraftCostModelTest, AProbesCatchUpRoundDoesNotCountTowardsTheDraftsTime) {
  DraftCostModel model(DraftCostOptions{}, 4);
  std::mt19937 rng(9);
  RunRounds(model, kRarelyKept, 20, rng);  // settled on k = 0, the first probe not yet due
  ASSERT_EQ(model.Next(), 0);
  const double d = model.Estimates().draft_token_seconds;
  int32_t rounds = 0;
  while (model.Next() == 0 && rounds++ < 100) {
    model.Observe(Round(0, 0, 1, 0, 1e-3));
  }
  const int32_t k = model.Next();
  ASSERT_GT(k, 0);
  model.Observe(Round(k, 0, 1, k * 9e-3, (k + 1) * 1e-3));
  EXPECT_EQ(model.Estimates().draft_token_seconds, d);
  ASSERT_GT(model.Next(), 0);  // the probe's second round
  model.Observe(Round(k, 0, 1, k * 0.25e-3, (k + 1) * 1e-3));
  EXPECT_NE(model.Estimates().draft_token_seconds, d);
}

// Remote calls: what a call's wall time has beyond the worker's compute is its round trip.
// In-process (compute_only) the difference is preemption and costs nothing.
TEST(DraftCostModelTest, CountsWallBeyondComputeAsOverheadUnlessComputeOnly) {
  for (const bool compute_only : {false, true}) {
    SCOPED_TRACE(compute_only);
    DraftCostOptions options;
    options.compute_only = compute_only;
    DraftCostModel model(options, 2);
    RoundReport r = Round(2, 1, 2, 0.4e-3, 1e-3);
    r.draft_seconds += 2e-3;
    r.verify_seconds += 3e-3;
    model.Observe(r);
    const DraftCostEstimates e = model.Estimates();
    EXPECT_NEAR(e.draft_token_seconds, 0.2e-3, 1e-12);
    EXPECT_NEAR(e.draft_overhead_seconds, compute_only ? 0 : 2e-3, 1e-12);
    EXPECT_NEAR(e.verify_overhead_seconds, compute_only ? 0 : 3e-3, 1e-12);
    // A round of the target alone: t0 is its wall time per token (compute with compute_only).
    RoundReport alone = Round(0, 0, 2, 0, 2e-3);
    alone.verify_seconds = 6e-3;
    model.Observe(alone);
    EXPECT_NEAR(model.Estimates().alone_token_seconds, compute_only ? 1e-3 : 3e-3, 1e-12);
  }
}

TEST(DraftCostModelTest, ReportPutsTheEstimatesInTheStatistics) {
  DraftCostModel model(DraftCostOptions{}, 3);
  model.Observe(Round(3, 2, 3, 0.3e-3, 1e-3));
  SpeculationStats stats;
  model.Report(stats);
  ASSERT_TRUE(stats.cost_model.has_value());
  EXPECT_EQ(stats.cost_model->chosen_k, model.Next());
  EXPECT_NEAR(stats.cost_model->draft_token_seconds, 0.1e-3, 1e-12);
  // The fixed policy reports nothing.
  SpeculationStats fixed;
  FixedDraftLength(3).Report(fixed);
  EXPECT_FALSE(fixed.cost_model.has_value());
}

TEST(DraftCostModelTest, ThreadCpuSecondsCountsComputeNotSleep) {
  const double start = ThreadCpuSeconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_LT(ThreadCpuSeconds() - start, 0.025);
  volatile double x = 0;
  const auto wall = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - wall < std::chrono::milliseconds(20)) x = x + 1;
  EXPECT_GT(ThreadCpuSeconds() - start, 0.001);  // some of the 20 ms of spinning, even when loaded
}

// The simulated hosts of tools/bench/two_host_bench.py as measured (F16 target, its Q8_0 as
// the draft, a core each): d = 22 ms a guess, v(r) = 24 + 4.7 r ms, 96 % kept. Pipelined,
// k = 1 or 2 beats the target alone by about 15 %; but after one round, all four guesses
// kept, the prior leaves a_0 at 0.76, which says k = 0 (and the next probe is 32 rounds on).
TEST(DraftCostModelTest, KeepsGuessingUntilTheAcceptanceIsKnown) {
  const Pair two_hosts{0.96, 22, 24, 4.7};
  DraftCostOptions options;
  options.pipelined = true;
  DraftCostModel model(options, 4);
  std::mt19937 rng(13);
  EXPECT_GE(RunRounds(model, two_hosts, 40, rng, /*standins=*/true), 35);
  EXPECT_GE(model.Next(), 1);
  EXPECT_LE(model.Next(), 3);

  options.evidence_rounds = 0;  // one round's evidence
  DraftCostModel hasty(options, 4);
  EXPECT_LE(RunRounds(hasty, two_hosts, 30, rng, /*standins=*/true), 3);
}

// A pipelined round hits only when the stand-in is right too: its test is position k's
// acceptance, measured rather than carried over from the position before.
TEST(DraftCostModelTest, ATestedStandInIsTheNextPositionsAcceptance) {
  DraftCostOptions options;
  options.pipelined = true;
  DraftCostModel model(options, 1);
  RoundReport round = Round(1, 1, 2, 1e-3, 2e-3);
  round.standin_tested = true;
  round.standin_kept = false;
  model.Observe(round);
  const DraftCostEstimates e = model.Estimates();
  ASSERT_EQ(e.acceptance.size(), 2u);
  // The prior (0.5, worth one round) decayed by 0.9, then one observation.
  EXPECT_NEAR(e.acceptance[0], (0.45 + 1) / 1.9, 1e-12);
  // Position 1 starts from position 0's estimate, worth one round, then the miss.
  EXPECT_NEAR(e.acceptance[1], 0.9 * e.acceptance[0] / 1.9, 1e-12);
}

// A draft whose guesses are all refused is given up after its first round, evidence or not.
TEST(DraftCostModelTest, GivesUpAtOnceOnADraftWhoseFirstGuessesAreRefused) {
  DraftCostModel model(DraftCostOptions{}, 4);
  std::mt19937 rng(17);
  EXPECT_EQ(RunRounds(model, {0.0, 0.2, 1, 0.2}, 20, rng), 1);
}

// Remote, what the coordinator does between rounds (streaming the tokens out, the next
// call's set-up) is paid once a round: a round without guesses pays it for one token, a
// round of k guesses for E(k). Measured from rounds without guesses; not in-process, where
// rounds are costed by compute alone.
TEST(DraftCostModelTest, CountsTheWorkBetweenRoundsOnceARound) {
  for (const bool compute_only : {false, true}) {
    DraftCostOptions options;
    options.compute_only = compute_only;
    DraftCostModel model(options, 4);
    RoundReport first = Round(4, 4, 5, 4e-3, 5e-3);
    first.round_seconds = 12e-3;
    model.Observe(first);
    RoundReport alone = Round(0, 0, 1, 0, 2e-3);
    alone.round_seconds = 5e-3;
    model.Observe(alone);
    const DraftCostEstimates e = model.Estimates();
    EXPECT_DOUBLE_EQ(e.round_overhead_seconds, compute_only ? 0 : 3e-3) << compute_only;
    EXPECT_DOUBLE_EQ(e.alone_token_seconds, compute_only ? 2e-3 : 5e-3) << compute_only;
    const double g = e.round_overhead_seconds;
    EXPECT_NEAR(SequentialTokensPerSecond(e, 2),
                ExpectedRoundTokens(e, 2) /
                    (2 * e.draft_token_seconds + e.draft_overhead_seconds + e.verify_base_seconds +
                     3 * e.verify_row_seconds + e.verify_overhead_seconds + g),
                1e-9)
        << compute_only;
  }
}

TEST(DraftCostModelTest, FirstRoundUsesTheCallersKClampedThenTheTargetAlone) {
  DraftCostModel model(DraftCostOptions{}, 3);
  EXPECT_EQ(model.Next(), 3);
  model.Observe(Round(3, 3, 4, 3e-4, 1.1e-3));
  EXPECT_EQ(model.Next(), 0);  // t0 is measured once before the model chooses
  // The caller's k is clamped to max_draft_tokens.
  DraftCostModel clamped(DraftCostOptions{}, 99);
  EXPECT_EQ(clamped.Next(), 16);
}

}  // namespace
}  // namespace tandem
