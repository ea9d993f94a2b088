#include "services/coordinator/call_thread.h"

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;

TEST(CallThreadTest, FutureHoldsTheCallsStatus) {
  CallThread thread;
  std::future<absl::Status> ok = thread.Run([] { return absl::OkStatus(); });
  std::future<absl::Status> late =
      thread.Run([] { return absl::DeadlineExceededError("draft at draft-0 answered late"); });
  EXPECT_OK(ok.get());
  EXPECT_THAT(late.get(),
              StatusIs(absl::StatusCode::kDeadlineExceeded, "draft at draft-0 answered late"));
}

TEST(CallThreadTest, RunsEveryCallOnOneThreadOtherThanTheCallers) {
  CallThread thread;
  std::vector<std::thread::id> ran_on(3);
  for (std::thread::id& id : ran_on) {
    std::future<absl::Status> done = thread.Run([&id] {
      id = std::this_thread::get_id();
      return absl::OkStatus();
    });
    EXPECT_OK(done.get());
  }
  EXPECT_NE(ran_on[0], std::this_thread::get_id());
  EXPECT_EQ(ran_on[1], ran_on[0]);
  EXPECT_EQ(ran_on[2], ran_on[0]);
}

TEST(CallThreadTest, RunsCallsInTheOrderGiven) {
  CallThread thread;
  std::vector<int> order;  // written by the call thread only
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  thread.Run([&] {
    released.wait();  // the next calls queue meanwhile
    order.push_back(1);
    return absl::OkStatus();
  });
  thread.Run([&] {
    order.push_back(2);
    return absl::OkStatus();
  });
  std::future<absl::Status> last = thread.Run([&] {
    order.push_back(3);
    return absl::OkStatus();
  });
  release.set_value();
  EXPECT_OK(last.get());
  EXPECT_THAT(order, ElementsAre(1, 2, 3));
}

TEST(CallThreadTest, CallerRunsWhileTheCallWaits) {
  // What the draft's prefill relies on: the caller's own call goes on meanwhile.
  CallThread thread;
  std::promise<void> caller_done;
  std::future<void> seen = caller_done.get_future();
  std::future<absl::Status> call = thread.Run([&] {
    return seen.wait_for(std::chrono::seconds(10)) == std::future_status::ready
               ? absl::OkStatus()
               : absl::DeadlineExceededError("the caller never ran");
  });
  caller_done.set_value();
  EXPECT_OK(call.get());
}

TEST(CallThreadTest, WaitReturnsOnceEveryCallHasRun) {
  CallThread thread;
  std::atomic<int> ran{0};
  for (int i = 0; i < 3; ++i) {
    thread.Run([&ran] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ++ran;
      return absl::OkStatus();
    });
  }
  thread.Wait();
  EXPECT_EQ(ran, 3);
}

TEST(CallThreadTest, WaitWithoutCallsReturnsAtOnce) {
  CallThread thread;
  thread.Wait();
}

TEST(CallThreadTest, DestructorRunsTheCallsAlreadyGiven) {
  std::atomic<int> ran{0};
  {
    CallThread thread;
    for (int i = 0; i < 3; ++i) {
      thread.Run([&ran] {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        ++ran;
        return absl::OkStatus();
      });
    }
  }
  EXPECT_EQ(ran, 3);
}

}  // namespace
}  // namespace tandem
