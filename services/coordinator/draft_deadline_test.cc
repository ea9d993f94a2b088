#include "services/coordinator/draft_deadline.h"

#include <algorithm>
#include <vector>

#include "gtest/gtest.h"

namespace tandem {
namespace {

DraftDeadlineOptions Options() {
  DraftDeadlineOptions o;
  o.floor = absl::Milliseconds(50);
  o.multiple = 4;
  o.liveness_multiple = 16;
  o.liveness_floor = absl::Seconds(1);
  o.percentile = 0.95;
  o.window = 20;
  o.min_samples = 4;
  o.cold_deadline = absl::Seconds(2);
  o.ceiling = absl::Seconds(10);
  return o;
}

TEST(DraftLatencyTest, ColdDeadlineUntilEnoughCallsAreKnown) {
  DraftLatency latency(Options());
  EXPECT_EQ(latency.Deadline(4), absl::Seconds(2));
  EXPECT_EQ(latency.SlowAfter(4), absl::Seconds(2));
  for (int i = 0; i < 3; ++i) latency.Observe(absl::Milliseconds(40), 4);
  EXPECT_EQ(latency.Deadline(4), absl::Seconds(2));
  latency.Observe(absl::Milliseconds(40), 4);
  EXPECT_EQ(latency.SlowAfter(4), absl::Milliseconds(160));  // 4 × 10 ms per token × 4 tokens
  EXPECT_EQ(latency.Deadline(4), absl::Seconds(1));  // 16 × 40 ms is below the liveness floor
}

TEST(DraftLatencyTest, SlowAfterIsTheMultipleOfTheHighPercentileScaledByTokens) {
  struct Case {
    std::vector<int> per_token_ms;  // one call of one token each
    int64_t tokens;
    absl::Duration expected;
  };
  const std::vector<Case> cases = {
      // 20 samples: the 95th percentile by nearest rank is the 19th smallest.
      {{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 30, 200}, 1, absl::Milliseconds(120)},
      {{5, 5, 5, 5}, 1, absl::Milliseconds(50)},       // 20 ms: the floor wins
      {{5, 5, 5, 5}, 10, absl::Milliseconds(200)},     // ten positions, ten times as long
      {{500, 500, 500, 500}, 16, absl::Seconds(10)},   // capped by the ceiling
      {{10, 20, 30, 40}, 1, absl::Milliseconds(160)},  // p95 of four is the largest
  };
  for (const Case& c : cases) {
    DraftLatency latency(Options());
    for (int ms : c.per_token_ms) latency.Observe(absl::Milliseconds(ms), 1);
    EXPECT_EQ(latency.SlowAfter(c.tokens), c.expected) << c.per_token_ms.size() << " samples";
  }
}

// A call is cut off (the draft failed) only far past the time it is slow after: a busy draft
// answers late, a frozen one not at all.
TEST(DraftLatencyTest, DeadlineIsTheLivenessBoundFarAboveTheSlowOne) {
  struct Case {
    int per_token_ms;  // four calls of one token each
    int64_t tokens;
    absl::Duration floor;
    absl::Duration slow_after;
    absl::Duration deadline;
  };
  const std::vector<Case> cases = {
      // A fast draft: slow past the floor, failed past the liveness floor.
      {1, 4, absl::Milliseconds(50), absl::Milliseconds(50), absl::Seconds(1)},
      // A draft batching many sessions: 16 × the percentile.
      {100, 1, absl::Milliseconds(50), absl::Milliseconds(400), absl::Milliseconds(1600)},
      {100, 4, absl::Milliseconds(50), absl::Milliseconds(1600), absl::Milliseconds(6400)},
      {500, 16, absl::Milliseconds(50), absl::Seconds(10), absl::Seconds(10)},  // the ceiling
      // A floor above the liveness floor (--draft-deadline-floor-ms 5000) holds for both.
      {1, 4, absl::Seconds(5), absl::Seconds(5), absl::Seconds(5)},
  };
  for (const Case& c : cases) {
    DraftDeadlineOptions o = Options();
    o.floor = c.floor;
    o.cold_deadline = std::max(o.cold_deadline, c.floor);
    DraftLatency latency(o);
    for (int i = 0; i < 4; ++i) latency.Observe(absl::Milliseconds(c.per_token_ms), 1);
    EXPECT_EQ(latency.SlowAfter(c.tokens), c.slow_after) << c.per_token_ms << " ms × " << c.tokens;
    EXPECT_EQ(latency.Deadline(c.tokens), c.deadline) << c.per_token_ms << " ms × " << c.tokens;
  }
}

TEST(DraftLatencyTest, OnlyTheRecentWindowCounts) {
  DraftLatency latency(Options());
  for (int i = 0; i < 20; ++i) latency.Observe(absl::Milliseconds(100), 1);
  EXPECT_EQ(latency.PerTokenPercentile(), absl::Milliseconds(100));
  for (int i = 0; i < 20; ++i) latency.Observe(absl::Milliseconds(20), 1);  // the draft sped up
  EXPECT_EQ(latency.PerTokenPercentile(), absl::Milliseconds(20));
  EXPECT_EQ(latency.SlowAfter(1), absl::Milliseconds(80));
}

TEST(DraftLatencyTest, CallsAreMeasuredPerToken) {
  DraftLatency latency(Options());
  for (int i = 0; i < 4; ++i) latency.Observe(absl::Milliseconds(80), 8);
  EXPECT_EQ(latency.PerTokenPercentile(), absl::Milliseconds(10));
  latency.Observe(absl::Milliseconds(3), 0);  // no positions counts as one
  EXPECT_EQ(latency.PerTokenPercentile(), absl::Milliseconds(10));
}

TEST(DraftDeadlineOptionsTest, RefusesOptionsThatCannotWork) {
  EXPECT_TRUE(ValidateDraftDeadlineOptions(Options()).ok());
  auto with = [](auto change) {
    DraftDeadlineOptions o = Options();
    change(o);
    return ValidateDraftDeadlineOptions(o).code();
  };
  const auto bad = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(with([](auto& o) { o.floor = absl::ZeroDuration(); }), bad);
  EXPECT_EQ(with([](auto& o) { o.ceiling = absl::Milliseconds(10); }), bad);
  EXPECT_EQ(with([](auto& o) { o.multiple = 0.5; }), bad);
  EXPECT_EQ(with([](auto& o) { o.percentile = 0; }), bad);
  EXPECT_EQ(with([](auto& o) { o.percentile = 1.5; }), bad);
  EXPECT_EQ(with([](auto& o) { o.min_samples = 30; }), bad);
  EXPECT_EQ(with([](auto& o) { o.cold_deadline = absl::Milliseconds(1); }), bad);
  EXPECT_EQ(with([](auto& o) { o.liveness_multiple = 2; }), bad);  // below the multiple
  EXPECT_EQ(with([](auto& o) { o.liveness_floor = absl::ZeroDuration(); }), bad);
}

TEST(BackoffTest, DoublesPerFailureUpToTheMaximumAndResetsOnSuccess) {
  Backoff backoff({absl::Seconds(1), 2, absl::Seconds(5)});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_TRUE(backoff.Allowed(t0));
  const std::vector<absl::Duration> waits = {absl::Seconds(1), absl::Seconds(2), absl::Seconds(4),
                                             absl::Seconds(5), absl::Seconds(5)};
  absl::Time now = t0;
  for (absl::Duration wait : waits) {
    EXPECT_EQ(backoff.Fail(now), now + wait);
    EXPECT_FALSE(backoff.Allowed(now + wait - absl::Milliseconds(1)));
    EXPECT_TRUE(backoff.Allowed(now + wait));
    now += wait;
  }
  EXPECT_EQ(backoff.failures(), 5);
  backoff.Succeed();
  EXPECT_EQ(backoff.failures(), 0);
  EXPECT_TRUE(backoff.Allowed(now));
  EXPECT_EQ(backoff.Fail(now), now + absl::Seconds(1));  // from the start again
}

// 16 sessions' calls in flight when the draft froze all fail: one failure, one pause.
TEST(BackoffTest, FailuresDuringAPauseDoNotLengthenIt) {
  Backoff backoff({absl::Seconds(1), 2, absl::Seconds(60)});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_EQ(backoff.Fail(t0), t0 + absl::Seconds(1));
  for (int session = 1; session < 16; ++session) {
    EXPECT_EQ(backoff.Fail(t0 + absl::Milliseconds(50 * session)), t0 + absl::Seconds(1));
  }
  EXPECT_EQ(backoff.failures(), 1);
  const absl::Time later = t0 + absl::Seconds(1);  // the retry fails: twice as long
  EXPECT_EQ(backoff.Fail(later), later + absl::Seconds(2));
  EXPECT_EQ(backoff.failures(), 2);
}

// A probe that finds the draft back ends the pause; the count stays for the next failure.
TEST(BackoffTest, AnAnsweredProbeEndsThePauseButKeepsTheCount) {
  Backoff backoff({absl::Seconds(1), 2, absl::Seconds(60)});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  backoff.Fail(t0);
  backoff.Fail(t0 + absl::Seconds(1));  // 2 s, to t0 + 3 s
  EXPECT_FALSE(backoff.Allowed(t0 + absl::Seconds(2)));
  backoff.Reprobed();
  EXPECT_TRUE(backoff.Allowed(t0 + absl::Seconds(2)));
  EXPECT_EQ(backoff.failures(), 2);
  EXPECT_EQ(backoff.Fail(t0 + absl::Seconds(2)), t0 + absl::Seconds(6));  // the third: 4 s
}

TEST(BackoffTest, ManyFailuresDoNotOverflow) {
  Backoff backoff({absl::Seconds(1), 2, absl::Seconds(60)});
  absl::Time now = absl::FromUnixSeconds(0);
  for (int i = 0; i < 200; ++i) now = backoff.Fail(now);
  EXPECT_EQ(backoff.Fail(now), now + absl::Seconds(60));
}

}  // namespace
}  // namespace tandem
