// WorkerPool over in-process workers whose Describe reports chosen loads: choice by load,
// skipping replicas that are down or backing off, and waiting for one that comes back.
#include "services/coordinator/worker_pool.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;

// Describe answers the load set here, or UNAVAILABLE while `down`.
class LoadedWorker final : public v1::Worker::Service {
 public:
  std::atomic<int> active{0}, max{16}, queue{0};
  std::atomic<bool> down{false};

  grpc::Status Describe(grpc::ServerContext*, const v1::DescribeRequest*,
                        v1::DescribeResponse* response) override {
    if (down) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "loading");
    response->set_active_sessions(active);
    response->set_max_sessions(max);
    response->set_queue_depth(queue);
    return grpc::Status::OK;
  }
};

class WorkerPoolTest : public ::testing::Test {
 protected:
  void Start(absl::Duration reconnect_grace = absl::Seconds(5)) {
    std::vector<std::unique_ptr<WorkerClient>> clients;
    for (int i = 0; i < 2; ++i) {
      grpc::ServerBuilder builder;
      builder.RegisterService(&workers_[i]);
      servers_.push_back(builder.BuildAndStart());
      clients.push_back(std::make_unique<WorkerClient>("worker-" + std::to_string(i),
                                                       servers_.back()->InProcessChannel({})));
    }
    WorkerPoolOptions options;
    options.probe_interval = absl::Milliseconds(10);
    options.reconnect_grace = reconnect_grace;
    pool_ = std::make_unique<WorkerPool>(std::move(clients), options);
    pool_->StartWatching();
  }
  void TearDown() override {
    pool_.reset();
    for (auto& s : servers_) s->Shutdown();
  }
  // Waits for two full probe rounds after a change of the workers' reports.
  void Settle() { std::this_thread::sleep_for(std::chrono::milliseconds(100)); }

  LoadedWorker workers_[2];
  std::vector<std::unique_ptr<grpc::Server>> servers_;
  std::unique_ptr<WorkerPool> pool_;
};

TEST_F(WorkerPoolTest, PicksTheReplicaWithTheLeastLoadRelativeToItsSize) {
  struct Case {
    int active0, max0, queue0, active1, max1, queue1;
    size_t expected;
  };
  const std::vector<Case> cases = {
      {8, 16, 0, 0, 16, 0, 1},   // sessions other coordinators hold
      {0, 16, 10, 2, 16, 0, 1},  // a queue of waiting model work
      {8, 64, 0, 1, 4, 0, 0},    // 8 of 64 is less than 1 of 4
      {3, 16, 1, 5, 16, 0, 0},
  };
  Start();
  for (const Case& c : cases) {
    workers_[0].active = c.active0, workers_[0].max = c.max0, workers_[0].queue = c.queue0;
    workers_[1].active = c.active1, workers_[1].max = c.max1, workers_[1].queue = c.queue1;
    Settle();
    for (int i = 0; i < 4; ++i) {  // the same answer whatever the tie-break rotation
      EXPECT_EQ(pool_->Pick(), c.expected) << c.active0 << "/" << c.max0 << " vs " << c.active1;
    }
  }
}

TEST_F(WorkerPoolTest, EqualLoadsAlternateAndLeasesCountAtOnce) {
  Start();
  Settle();
  std::optional<size_t> first = pool_->Pick();
  ASSERT_TRUE(first.has_value());
  ReplicaLease lease(pool_.get(), *first);
  EXPECT_EQ(pool_->Pick(), 1 - *first);  // before any probe sees the new session
  lease.Release();
  EXPECT_NE(pool_->Pick(), pool_->Pick());  // equal again: they take turns
}

TEST_F(WorkerPoolTest, SkipsReplicasThatAreDownOrBackingOff) {
  Start();
  workers_[0].down = true;
  workers_[1].active = 15;
  Settle();
  EXPECT_FALSE(pool_->Ready(0));
  EXPECT_EQ(pool_->Pick(), 1u);  // loaded, but the only one ready
  workers_[0].down = false;
  Settle();
  EXPECT_EQ(pool_->Pick(), 0u);
  pool_->backoff(0).Fail(absl::Now());  // e.g. a draft that timed out: 1 s by default
  EXPECT_FALSE(pool_->Usable(0));
  EXPECT_EQ(pool_->Pick(), 1u);
  pool_->MarkDown(1);  // a failed call: out until the next probe answers
  EXPECT_EQ(pool_->Pick(), std::nullopt);
  Settle();
  EXPECT_EQ(pool_->Pick(), 1u);
}

TEST_F(WorkerPoolTest, HealthReportsFollowTheReplicas) {
  Start();
  std::atomic<int> reports{0}, serving{-1};
  pool_->SetListener([&](bool s) {
    ++reports;
    serving = s;
  });
  EXPECT_EQ(serving, 1);  // reported at once
  workers_[0].down = true;
  workers_[1].down = true;
  Settle();
  EXPECT_EQ(serving, 0);
  workers_[1].down = false;
  Settle();
  EXPECT_EQ(serving, 1);
  EXPECT_EQ(reports, 3);  // changes only
  pool_->SetListener(nullptr);
  workers_[1].down = true;
  Settle();
  EXPECT_EQ(serving, 1);  // no reports after the listener is gone
}

TEST_F(WorkerPoolTest, OnReadyWaitsForAReplicaThatComesBackOrGivesUp) {
  Start();
  workers_[0].down = true;
  workers_[1].down = true;
  Settle();
  std::thread back([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    workers_[1].down = false;
  });
  const auto start = std::chrono::steady_clock::now();
  std::vector<size_t> tried;
  EXPECT_OK(pool_->OnReady(absl::Now() + absl::Seconds(5), [&](size_t i) {
    tried.push_back(i);
    return absl::OkStatus();
  }));
  back.join();
  EXPECT_EQ(tried, std::vector<size_t>{1});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));

  // A replica whose calls fail as down is marked down and the other tried; none left: give up.
  workers_[0].down = false;
  Settle();
  tried.clear();
  EXPECT_THAT(pool_->OnReady(absl::Now() + absl::Milliseconds(300),
                             [&](size_t i) {
                               tried.push_back(i);
                               return absl::UnavailableError("stream broke");
                             }),
              StatusIs(absl::StatusCode::kUnavailable, ::testing::HasSubstr("stream broke")));
  EXPECT_GE(tried.size(), 2u);
  // Errors that say nothing about the worker's health come back as they are.
  EXPECT_THAT(pool_->OnReady(absl::Now() + absl::Seconds(1),
                             [](size_t) { return absl::InvalidArgumentError("bad"); }),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

// A port nobody listens on (a closed loopback port) as the pool's only replica.
std::unique_ptr<WorkerPool> PoolOfAGoneWorker(absl::Duration grace) {
  std::vector<std::unique_ptr<WorkerClient>> clients;
  clients.push_back(std::make_unique<WorkerClient>("127.0.0.1:1"));
  WorkerPoolOptions options;
  options.probe_interval = absl::Milliseconds(10);
  options.probe_timeout = absl::Milliseconds(200);
  options.reconnect_grace = grace;
  auto pool = std::make_unique<WorkerPool>(std::move(clients), options);
  pool->StartWatching();
  return pool;
}

TEST(WorkerPoolGoneTest, NothingReadyOrStartingFailsAtOnceNotAtTheGiveUpTime) {
  std::unique_ptr<WorkerPool> pool = PoolOfAGoneWorker(absl::Milliseconds(100));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // probes fail past the grace
  EXPECT_FALSE(pool->AnyReady());
  EXPECT_FALSE(pool->AnyReadyOrStarting());
  const auto start = std::chrono::steady_clock::now();
  int calls = 0;
  EXPECT_THAT(pool->OnReady(absl::Now() + absl::Seconds(30),
                            [&](size_t) {
                              ++calls;
                              return absl::OkStatus();
                            }),
              StatusIs(absl::StatusCode::kUnavailable,
                       ::testing::HasSubstr("no worker is ready or starting")));
  EXPECT_EQ(calls, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
}

TEST(WorkerPoolGoneTest, AWorkerLostWithinTheGraceIsWaitedFor) {
  std::unique_ptr<WorkerPool> pool = PoolOfAGoneWorker(absl::Seconds(60));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(pool->AnyReady());
  EXPECT_TRUE(pool->AnyReadyOrStarting());  // it may be restarting on its port
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(
      pool->OnReady(absl::Now() + absl::Milliseconds(300), [](size_t) { return absl::OkStatus(); }),
      StatusIs(absl::StatusCode::kUnavailable,
               ::testing::HasSubstr("no worker became ready in time")));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(290));
}

// Over TCP, as in production: a process that answers "loading" is starting, past any grace.
TEST(WorkerPoolGoneTest, ALoadingWorkerIsStartingWhateverTheGrace) {
  LoadedWorker loading;
  loading.down = true;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&loading);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_GT(port, 0);
  std::vector<std::unique_ptr<WorkerClient>> clients;
  clients.push_back(std::make_unique<WorkerClient>(absl::StrCat("127.0.0.1:", port)));
  WorkerPoolOptions options;
  options.probe_interval = absl::Milliseconds(10);
  options.reconnect_grace = absl::Milliseconds(100);
  auto pool = std::make_unique<WorkerPool>(std::move(clients), options);
  pool->StartWatching();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // past the grace
  EXPECT_FALSE(pool->AnyReady());
  EXPECT_TRUE(pool->AnyReadyOrStarting());
  pool.reset();
  server->Shutdown();
}

// A draft whose calls failed but whose probes keep answering serves its back-off; one whose
// probes failed too (frozen, restarting) may be tried as soon as a probe answers again.
TEST_F(WorkerPoolTest, AProbeEndsABackOffOnlyWhenItsProbesHadFailed) {
  Start();
  Settle();
  pool_->backoff(0).Fail(absl::Now());  // 1 s, the default
  pool_->MarkDown(0);
  Settle();
  EXPECT_TRUE(pool_->Ready(0));    // the probe answers...
  EXPECT_FALSE(pool_->Usable(0));  // ...but the call failures' pause stands
  workers_[0].down = true;
  Settle();
  workers_[0].down = false;
  Settle();
  EXPECT_TRUE(pool_->Usable(0));  // back after failed probes: tried again at once
}

TEST_F(WorkerPoolTest, AFullReplicaMakesWayForOneWithRoom) {
  Start();
  Settle();
  std::vector<size_t> tried;
  auto only_one_has_room = [&](size_t room) {
    return [&tried, room](size_t i) {
      tried.push_back(i);
      return i == room ? absl::OkStatus() : absl::ResourceExhaustedError("full");
    };
  };
  for (size_t room : {0u, 1u}) {
    tried.clear();
    EXPECT_OK(pool_->OnReady(absl::Now() + absl::Seconds(1), only_one_has_room(room)));
    EXPECT_EQ(tried.back(), room);
    EXPECT_LE(tried.size(), 2u);
  }
  // Both full: the workers' answer, at once (no waiting for the give-up time).
  tried.clear();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(pool_->OnReady(absl::Now() + absl::Seconds(5), only_one_has_room(9)),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(tried.size(), 2u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_TRUE(pool_->Ready(0));  // full is not down
  EXPECT_TRUE(pool_->Ready(1));
}

}  // namespace
}  // namespace tandem
