// Several choices per request (choices.h) over a fake single-choice generate: the seed rule,
// the checks on n, the order the choices start in, the tags and totals on their messages,
// and how an error or a departed client ends them all.
#include "services/coordinator/choices.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::IsOk;
using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

TEST(ChoiceSeedTest, ChoiceZeroUsesTheRequestSeed) {
  for (uint64_t seed : {uint64_t{0}, uint64_t{1}, uint64_t{42}, ~uint64_t{0}}) {
    EXPECT_EQ(ChoiceSeed(seed, 0), seed);
  }
}

// The documented rule, pinned: SplitMix64's finalizer of seed + i * 0x9E3779B97F4A7C15.
TEST(ChoiceSeedTest, OtherChoicesUseTheDocumentedMix) {
  struct Case {
    uint64_t seed;
    int32_t index;
    uint64_t expected;
  };
  const Case cases[] = {
      // SplitMix64 seeded 0: its first two outputs.
      {0, 1, 0xE220A8397B1DCDAFull},
      {0, 2, 0x6E789E6AA1B965F4ull},
      // Seeded 1234567: the first output (seed 1234567 + one increment).
      {1234567, 1, 0x599ED017FB08FC85ull},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ChoiceSeed(c.seed, c.index), c.expected) << c.seed << " choice " << c.index;
  }
}

TEST(ChoiceSeedTest, ChoicesOfNearbySeedsAreDistinct) {
  std::set<uint64_t> seen;
  for (uint64_t seed = 0; seed < 64; ++seed) {
    for (int32_t i = 0; i < 8; ++i) seen.insert(ChoiceSeed(seed, i));
  }
  // Choice 0 of seed s is s itself; the others are mixed: no collisions among 512.
  EXPECT_EQ(seen.size(), 64u * 8u);
}

TEST(CheckChoicesTest, RefusesBadCountsNamingN) {
  RequestLimits limits;
  limits.max_choices = 4;
  struct Case {
    int32_t n;
    std::string session;
    absl::StatusCode code;
    std::string message;
  };
  const Case cases[] = {
      {0, "", absl::StatusCode::kOk, ""},
      {1, "chat-1", absl::StatusCode::kOk, ""},
      {4, "", absl::StatusCode::kOk, ""},
      {-1, "", absl::StatusCode::kInvalidArgument, "n -1 < 0"},
      {5, "", absl::StatusCode::kInvalidArgument, "n is 5 choices; the limit is 4 (--max-choices)"},
      {2, "chat-1", absl::StatusCode::kInvalidArgument, "n 2 with a session_id"},
  };
  for (const Case& c : cases) {
    v1::GenerateRequest request;
    request.set_n(c.n);
    request.set_session_id(c.session);
    const absl::Status status = CheckChoices(request, limits);
    EXPECT_EQ(status.code(), c.code) << c.n << " " << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.message));
  }
}

TEST(ChoiceCountTest, ZeroAndOneAreOneChoice) {
  v1::GenerateRequest request;
  EXPECT_EQ(ChoiceCount(request), 1);
  request.set_n(1);
  EXPECT_EQ(ChoiceCount(request), 1);
  request.set_n(3);
  EXPECT_EQ(ChoiceCount(request), 3);
}

// A fake single-choice generate: writes `deltas` deltas carrying the seed it was given, then a
// final with `generated` tokens of a 10-token prompt, of which choices after the first have
// 8 cached (as if they adopted choice 0's blocks).
struct FakeGenerate {
  int deltas = 2;
  int32_t generated = 5;
  // Choice seeds that fail before writing anything, with this status.
  std::set<uint64_t> failing;
  absl::Status failure = absl::ResourceExhaustedError("queue full");
  std::mutex mutex;
  std::vector<uint64_t> started;  // seeds, in start order
  std::atomic<bool> first_wrote{false};
  std::atomic<bool> started_before_first{false};

  absl::Status operator()(const v1::GenerateRequest& request, const ChoiceWrite& write,
                          const ChoiceCancelled& cancelled) {
    const uint64_t seed = request.sampling().seed();
    EXPECT_EQ(request.n(), 0);
    bool first = false;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!started.empty() && !first_wrote) started_before_first = true;
      first = started.empty();
      started.push_back(seed);
    }
    if (failing.count(seed) > 0) return failure;
    for (int i = 0; i < deltas; ++i) {
      if (cancelled()) return absl::CancelledError("the client went away");
      v1::GenerateResponse delta;
      delta.mutable_delta()->set_text(std::to_string(seed));
      if (first) first_wrote = true;  // before the write that lets the others start
      if (!write(delta)) return absl::CancelledError("the client went away");
    }
    v1::GenerateResponse final;
    final.mutable_final()->set_seed(seed);
    final.mutable_final()->mutable_usage()->set_prompt_tokens(10);
    final.mutable_final()->mutable_usage()->set_cached_prompt_tokens(first ? 0 : 8);
    final.mutable_final()->mutable_usage()->set_generated_tokens(generated);
    final.mutable_final()->mutable_usage()->set_accepted_prediction_tokens(2);
    final.mutable_final()->mutable_usage()->set_rejected_prediction_tokens(1);
    if (!write(final)) return absl::CancelledError("the client went away");
    return absl::OkStatus();
  }
};

GenerateOneChoice Ref(FakeGenerate& fake) {
  return [&fake](const v1::GenerateRequest& r, const ChoiceWrite& w, const ChoiceCancelled& c) {
    return fake(r, w, c);
  };
}

TEST(GenerateChoicesTest, TagsEveryMessageAndSumsUsageOnTheLastFinal) {
  FakeGenerate fake;
  v1::GenerateRequest request;
  request.set_n(3);
  request.mutable_sampling()->set_seed(7);
  std::vector<v1::GenerateResponse> out;
  ASSERT_THAT(GenerateChoices(
                  request, /*fresh_seed=*/99, Ref(fake),
                  [&](const v1::GenerateResponse& m) {
                    out.push_back(m);
                    return true;
                  },
                  [] { return false; }),
              IsOk());
  ASSERT_EQ(out.size(), 9u);  // 3 choices x (2 deltas + 1 final)
  std::vector<int> deltas(3, 0), finals(3, 0);
  for (const v1::GenerateResponse& m : out) {
    const int i = m.choice_index();
    ASSERT_GE(i, 0);
    ASSERT_LT(i, 3);
    if (m.has_delta()) {
      EXPECT_EQ(m.delta().text(), std::to_string(ChoiceSeed(7, i)));
      ++deltas[i];
    } else {
      EXPECT_EQ(m.final().seed(), ChoiceSeed(7, i));
      ++finals[i];
    }
  }
  EXPECT_EQ(deltas, std::vector<int>({2, 2, 2}));
  EXPECT_EQ(finals, std::vector<int>({1, 1, 1}));
  // Only the last message carries the request's totals: the prompt once, tokens summed.
  for (size_t i = 0; i + 1 < out.size(); ++i) EXPECT_FALSE(out[i].final().has_request_usage());
  const v1::Usage& total = out.back().final().request_usage();
  EXPECT_EQ(total.prompt_tokens(), 10);
  EXPECT_EQ(total.cached_prompt_tokens(), 0);  // choice 0's: the one prefill
  EXPECT_EQ(total.generated_tokens(), 15);
  EXPECT_EQ(total.accepted_prediction_tokens(), 6);
  EXPECT_EQ(total.rejected_prediction_tokens(), 3);
}

TEST(GenerateChoicesTest, OthersStartAfterChoiceZerosFirstMessage) {
  FakeGenerate fake;
  v1::GenerateRequest request;
  request.set_n(4);
  request.mutable_sampling()->set_seed(3);
  ASSERT_THAT(GenerateChoices(
                  request, 0, Ref(fake), [](const v1::GenerateResponse&) { return true; },
                  [] { return false; }),
              IsOk());
  ASSERT_EQ(fake.started.size(), 4u);
  EXPECT_EQ(fake.started[0], 3u);  // choice 0, with the request's seed
  EXPECT_FALSE(fake.started_before_first);
}

TEST(GenerateChoicesTest, UnseededRequestUsesTheFreshSeedForChoiceZero) {
  FakeGenerate fake;
  v1::GenerateRequest request;
  request.set_n(2);
  std::vector<uint64_t> seeds;
  ASSERT_THAT(GenerateChoices(
                  request, /*fresh_seed=*/1234, Ref(fake),
                  [&](const v1::GenerateResponse& m) {
                    if (m.has_final()) seeds.push_back(m.final().seed());
                    return true;
                  },
                  [] { return false; }),
              IsOk());
  std::sort(seeds.begin(), seeds.end());
  std::vector<uint64_t> expected = {1234, ChoiceSeed(1234, 1)};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(seeds, expected);
}

TEST(GenerateChoicesTest, ChoiceZeroFailingEndsTheRequestBeforeTheOthersStart) {
  FakeGenerate fake;
  fake.failing = {5};
  v1::GenerateRequest request;
  request.set_n(3);
  request.mutable_sampling()->set_seed(5);
  int written = 0;
  EXPECT_THAT(GenerateChoices(
                  request, 0, Ref(fake),
                  [&](const v1::GenerateResponse&) {
                    ++written;
                    return true;
                  },
                  [] { return false; }),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("queue full")));
  EXPECT_EQ(written, 0);
  EXPECT_EQ(fake.started.size(), 1u);
}

TEST(GenerateChoicesTest, AnotherChoiceFailingEndsTheRequestWithItsError) {
  FakeGenerate fake;
  fake.deltas = 50;
  fake.failing = {ChoiceSeed(5, 2)};
  fake.failure = absl::OutOfRangeError("prompt longer than the context");
  v1::GenerateRequest request;
  request.set_n(3);
  request.mutable_sampling()->set_seed(5);
  EXPECT_THAT(GenerateChoices(
                  request, 0, Ref(fake), [](const v1::GenerateResponse&) { return true; },
                  [] { return false; }),
              StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("context")));
}

TEST(GenerateChoicesTest, ClientGoneCancelsEveryChoice) {
  FakeGenerate fake;
  fake.deltas = 1000;
  v1::GenerateRequest request;
  request.set_n(3);
  int written = 0;
  EXPECT_THAT(GenerateChoices(
                  request, 0, Ref(fake), [&](const v1::GenerateResponse&) { return ++written < 5; },
                  [] { return false; }),
              StatusIs(absl::StatusCode::kCancelled));
  EXPECT_EQ(written, 5);  // nothing is written after the failed write
}

TEST(GenerateChoicesTest, CancelledBeforeTheStartRunsNothingButChoiceZero) {
  FakeGenerate fake;
  v1::GenerateRequest request;
  request.set_n(3);
  EXPECT_THAT(GenerateChoices(
                  request, 0, Ref(fake), [](const v1::GenerateResponse&) { return true; },
                  [] { return true; }),
              StatusIs(absl::StatusCode::kCancelled));
  EXPECT_EQ(fake.started.size(), 1u);
}

}  // namespace
}  // namespace tandem
