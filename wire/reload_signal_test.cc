#include "wire/reload_signal.h"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(ReloadOnSignalTest, RunsTheCallbackOncePerSighupOnItsOwnThread) {
  BlockReloadSignal();  // as main() does, before the signal can arrive
  std::atomic<int> calls{0};
  std::atomic<bool> other_thread{false};
  const std::thread::id main_thread = std::this_thread::get_id();
  {
    ReloadOnSignal reload([&] {
      other_thread = std::this_thread::get_id() != main_thread;
      ++calls;
    });
    for (int expected = 1; expected <= 2; ++expected) {
      ASSERT_EQ(kill(getpid(), SIGHUP), 0);
      for (int i = 0; i < 500 && calls < expected; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      EXPECT_EQ(calls, expected);
    }
  }
  EXPECT_TRUE(other_thread);
  // After the watcher is gone the signal stays blocked: pending, not fatal, not handled.
  ASSERT_EQ(kill(getpid(), SIGHUP), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_EQ(calls, 2);
  sigset_t pending;
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGHUP), 1);
}

}  // namespace
}  // namespace tandem
