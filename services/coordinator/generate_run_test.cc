#include "services/coordinator/generate_run.h"

#include <atomic>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

v1::GenerateResponse Delta(const char* text) {
  v1::GenerateResponse m;
  m.mutable_delta()->set_text(text);
  return m;
}

TEST(GenerateRunTest, HandsOverEveryMessageThenTheStatus) {
  absl::Notification second;
  GenerateRun run([&](const GenerateRun::Write& write, const GenerateRun::Cancelled&) {
    write(Delta("a"));
    second.WaitForNotification();
    write(Delta("b"));
    return absl::DataLossError("broken");
  });
  std::vector<v1::GenerateResponse> got;
  bool ended = false;
  for (int i = 0; i < 500 && got.empty(); ++i) ended = run.Wait(absl::Milliseconds(10), &got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_FALSE(ended);
  EXPECT_EQ(got[0].delta().text(), "a");
  second.Notify();
  for (int i = 0; i < 500 && !ended; ++i) ended = run.Wait(absl::Milliseconds(10), &got);
  ASSERT_TRUE(ended);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].delta().text(), "b");
  EXPECT_EQ(run.status(), absl::DataLossError("broken"));
}

TEST(GenerateRunTest, CancelFailsWritesAndIsSeenByTheCancelledPoll) {
  absl::Notification cancelled_seen;
  std::atomic<bool> write_after_cancel{true};
  GenerateRun run([&](const GenerateRun::Write& write, const GenerateRun::Cancelled& cancelled) {
    for (int i = 0; i < 5000 && !cancelled(); ++i) absl::SleepFor(absl::Milliseconds(1));
    if (cancelled()) cancelled_seen.Notify();
    write_after_cancel = write(Delta("late"));
    return absl::CancelledError("the client went away");
  });
  run.Cancel();
  ASSERT_TRUE(cancelled_seen.WaitForNotificationWithTimeout(absl::Seconds(5)));
  std::vector<v1::GenerateResponse> got;
  bool ended = false;
  for (int i = 0; i < 500 && !ended; ++i) ended = run.Wait(absl::Milliseconds(10), &got);
  ASSERT_TRUE(ended);
  EXPECT_FALSE(write_after_cancel);
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(run.status().code(), absl::StatusCode::kCancelled);
}

TEST(GenerateRunTest, DestroyingARunningRunCancelsAndJoinsIt) {
  std::atomic<bool> returned{false};
  {
    GenerateRun run([&](const GenerateRun::Write&, const GenerateRun::Cancelled& cancelled) {
      for (int i = 0; i < 5000 && !cancelled(); ++i) absl::SleepFor(absl::Milliseconds(1));
      returned = true;
      return absl::OkStatus();
    });
  }
  EXPECT_TRUE(returned);
}

}  // namespace
}  // namespace tandem
