#include "services/coordinator/admission_queue.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

const auto kNever = [] { return false; };

absl::Time In(absl::Duration d) { return absl::Now() + d; }

// Waits (bounded) until `queue` has `n` waiting.
void AwaitWaiting(const AdmissionQueue& queue, int n) {
  for (int i = 0; i < 500 && queue.waiting() != n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(queue.waiting(), n);
}

TEST(AdmissionQueueTest, AdmitsUpToCapacityAtOnceAndTheNextWhenOneEnds) {
  AdmissionQueue queue(2, 4);
  ASSERT_OK_AND_ASSIGN(AdmissionQueue::Ticket a, queue.Admit(In(absl::Seconds(1)), kNever));
  ASSERT_OK_AND_ASSIGN(AdmissionQueue::Ticket b, queue.Admit(In(absl::Seconds(1)), kNever));
  EXPECT_EQ(queue.running(), 2);
  std::atomic<bool> admitted{false};
  std::thread third([&] {
    absl::StatusOr<AdmissionQueue::Ticket> c = queue.Admit(In(absl::Seconds(10)), kNever);
    EXPECT_OK(c.status());
    admitted = true;
  });
  AwaitWaiting(queue, 1);
  EXPECT_FALSE(admitted);
  { AdmissionQueue::Ticket done = std::move(a); }  // a's request ends
  third.join();
  EXPECT_TRUE(admitted);
  EXPECT_EQ(queue.running(), 1);  // b (c has ended too)
  EXPECT_EQ(queue.waiting(), 0);
}

TEST(AdmissionQueueTest, ACapacityThatGrowsAdmitsWaitersAndOneThatShrinksHoldsNewOnes) {
  AdmissionQueue queue(1, 4);
  ASSERT_OK_AND_ASSIGN(AdmissionQueue::Ticket a, queue.Admit(In(absl::Seconds(1)), kNever));
  std::thread second([&] { EXPECT_OK(queue.Admit(In(absl::Seconds(10)), kNever).status()); });
  AwaitWaiting(queue, 1);
  queue.SetCapacity(2);  // a target replica joined: the waiter starts with `a` still running
  second.join();
  EXPECT_EQ(queue.capacity(), 2);
  ASSERT_OK_AND_ASSIGN(AdmissionQueue::Ticket b, queue.Admit(In(absl::Seconds(1)), kNever));
  queue.SetCapacity(1);  // it left: both run on, a third waits for room
  EXPECT_EQ(queue.running(), 2);
  EXPECT_THAT(queue.Admit(In(absl::Milliseconds(50)), kNever),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST(AdmissionQueueTest, WaitersAreAdmittedInArrivalOrder) {
  AdmissionQueue queue(1, 8);
  auto holder = std::make_unique<AdmissionQueue::Ticket>();
  ASSERT_OK_AND_ASSIGN(*holder, queue.Admit(In(absl::Seconds(1)), kNever));
  std::mutex order_mutex;
  std::vector<int> order;
  std::vector<std::thread> waiters;
  for (int i = 0; i < 5; ++i) {
    waiters.emplace_back([&, i] {
      absl::StatusOr<AdmissionQueue::Ticket> t = queue.Admit(In(absl::Seconds(20)), kNever);
      EXPECT_OK(t.status());
      std::lock_guard<std::mutex> lock(order_mutex);
      order.push_back(i);
    });
    AwaitWaiting(queue, i + 1);  // i is in line before i + 1 arrives
  }
  holder.reset();
  for (std::thread& t : waiters) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(AdmissionQueueTest, AFullQueueIsResourceExhaustedAndAPassedDeadlineDeadlineExceeded) {
  AdmissionQueue queue(1, 1);
  ASSERT_OK_AND_ASSIGN(AdmissionQueue::Ticket running, queue.Admit(In(absl::Seconds(1)), kNever));
  std::thread waiter([&] {
    EXPECT_THAT(queue.Admit(In(absl::Milliseconds(300)), kNever),
                StatusIs(absl::StatusCode::kDeadlineExceeded,
                         HasSubstr("in the admission queue (1 requests running, 0 waiting")));
  });
  AwaitWaiting(queue, 1);
  EXPECT_THAT(queue.Admit(In(absl::Seconds(1)), kNever),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("maximum of 1 waiting ones (--max-queued-requests)")));
  waiter.join();
  EXPECT_EQ(queue.waiting(), 0);  // the one that gave up left the line
}

TEST(AdmissionQueueTest, ACancelledWaiterLeavesAndTheOneBehindMovesUp) {
  std::vector<int> lengths;
  AdmissionQueue queue(1, 4, [&](int waiting) { lengths.push_back(waiting); });
  auto holder = std::make_unique<AdmissionQueue::Ticket>();
  ASSERT_OK_AND_ASSIGN(*holder, queue.Admit(In(absl::Seconds(1)), kNever));
  std::atomic<bool> cancel{false};
  std::thread first([&] {
    EXPECT_THAT(queue.Admit(In(absl::Seconds(20)), [&] { return cancel.load(); }),
                StatusIs(absl::StatusCode::kCancelled));
  });
  AwaitWaiting(queue, 1);
  std::thread second([&] { EXPECT_OK(queue.Admit(In(absl::Seconds(20)), kNever).status()); });
  AwaitWaiting(queue, 2);
  cancel = true;
  first.join();
  EXPECT_EQ(queue.waiting(), 1);
  holder.reset();
  second.join();
  EXPECT_EQ(queue.waiting(), 0);
  EXPECT_EQ(lengths, (std::vector<int>{1, 2, 1, 0}));
}

KvBlockDemand Blocks(int64_t global, int64_t sliding = 0) {
  KvBlockDemand blocks;
  blocks.global = global;
  blocks.sliding = sliding;
  return blocks;
}

TEST(AdmissionQueueTest, KvBlocksHoldRequestsUntilReservedOnesAreReleased) {
  AdmissionQueue queue(8, 4);
  queue.SetKvCapacity(Blocks(10));
  ASSERT_OK_AND_ASSIGN(AdmissionQueue::Ticket a,
                       queue.Admit(In(absl::Seconds(1)), kNever, Blocks(6)));
  EXPECT_EQ(queue.reserved_blocks().global, 6);
  std::atomic<bool> admitted{false};
  std::thread second([&] {
    EXPECT_OK(queue.Admit(In(absl::Seconds(10)), kNever, Blocks(6)).status());
    admitted = true;
  });
  AwaitWaiting(queue, 1);  // a session slot is free, the blocks are not
  EXPECT_FALSE(admitted);
  { AdmissionQueue::Ticket done = std::move(a); }
  second.join();
  EXPECT_TRUE(admitted);
  EXPECT_EQ(queue.reserved_blocks().global, 0);  // both ended
  EXPECT_EQ(queue.running(), 0);
}

TEST(AdmissionQueueTest, ATicketMovedKeepsItsBlocksUntilItsLastOwnerEnds) {
  AdmissionQueue queue(8, 4);
  queue.SetKvCapacity(Blocks(10));
  AdmissionQueue::Ticket kept;
  {
    ASSERT_OK_AND_ASSIGN(AdmissionQueue::Ticket a,
                         queue.Admit(In(absl::Seconds(1)), kNever, Blocks(4)));
    kept = std::move(a);
  }
  EXPECT_EQ(queue.reserved_blocks().global, 4);
  kept = AdmissionQueue::Ticket();
  EXPECT_EQ(queue.reserved_blocks().global, 0);
}

TEST(AdmissionQueueTest, BlocksBeyondTheWholeKvCapacityAreRefusedAtOnceNamingBoth) {
  AdmissionQueue queue(8, 4);
  queue.SetKvCapacity(Blocks(10, 5));
  EXPECT_THAT(queue.Admit(In(absl::Seconds(10)), kNever, Blocks(11)),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("needs 11 KV blocks"), HasSubstr("holds 10"),
                             HasSubstr("--kv-budget-mb"))));
  EXPECT_THAT(queue.Admit(In(absl::Seconds(10)), kNever, Blocks(2, 6)),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("(6 sliding)")));
  EXPECT_EQ(queue.waiting(), 0);
}

TEST(AdmissionQueueTest, ALargeRequestFirstInLineIsNotOvertakenBySmallerOnes) {
  AdmissionQueue queue(8, 4);
  queue.SetKvCapacity(Blocks(10));
  auto holder = std::make_unique<AdmissionQueue::Ticket>();
  ASSERT_OK_AND_ASSIGN(*holder, queue.Admit(In(absl::Seconds(1)), kNever, Blocks(6)));
  std::atomic<bool> large_in{false}, small_in{false};
  std::thread large([&] {
    absl::StatusOr<AdmissionQueue::Ticket> t =
        queue.Admit(In(absl::Seconds(10)), kNever, Blocks(8));
    EXPECT_OK(t.status());
    large_in = true;
  });
  AwaitWaiting(queue, 1);
  std::thread small([&] {
    EXPECT_OK(queue.Admit(In(absl::Seconds(10)), kNever, Blocks(2)).status());
    small_in = true;
  });
  AwaitWaiting(queue, 2);  // 2 blocks are free, but the large one is first in line
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(small_in);
  EXPECT_FALSE(large_in);
  holder.reset();  // now both fit, one after the other
  large.join();
  small.join();
  EXPECT_EQ(queue.waiting(), 0);
}

TEST(AdmissionQueueTest, WithoutAKvCapacityBlocksAreNotCounted) {
  AdmissionQueue queue(2, 4);
  ASSERT_OK_AND_ASSIGN(AdmissionQueue::Ticket a,
                       queue.Admit(In(absl::Seconds(1)), kNever, Blocks(1000000)));
  ASSERT_OK_AND_ASSIGN(AdmissionQueue::Ticket b,
                       queue.Admit(In(absl::Seconds(1)), kNever, Blocks(1000000)));
  EXPECT_EQ(queue.running(), 2);
}

}  // namespace
}  // namespace tandem
