// WorkerPool whose replicas change (what ReplicaDiscovery reports): new addresses join once
// probed, unlisted ones retire and rejoin, a replica of another vocabulary is never used, and
// replicas pinned as they are picked spread concurrent sessions by load.
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "services/coordinator/worker_pool.h"

namespace tandem {
namespace {

// Describe answers with `max` sessions and vocabulary `fingerprint`.
class VocabularyWorker final : public v1::Worker::Service {
 public:
  std::atomic<int> max{16};
  std::string fingerprint = "vocab-a";  // set before the pool probes it

  grpc::Status Describe(grpc::ServerContext*, const v1::DescribeRequest*,
                        v1::DescribeResponse* response) override {
    response->set_max_sessions(max);
    response->mutable_model()->set_vocabulary_fingerprint(fingerprint);
    return grpc::Status::OK;
  }
};

class WorkerPoolMembersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 3; ++i) {
      grpc::ServerBuilder builder;
      builder.RegisterService(&workers_[i]);
      servers_["w" + std::to_string(i)] = builder.BuildAndStart();
    }
  }
  void Start(const std::vector<std::string>& first) {
    std::vector<std::unique_ptr<WorkerClient>> clients;
    for (const std::string& a : first) clients.push_back(make_client_(a));
    WorkerPoolOptions options;
    options.probe_interval = absl::Milliseconds(10);
    pool_ = std::make_unique<WorkerPool>(std::move(clients), options);
    pool_->SetRequiredFingerprint("vocab-a");
    pool_->StartWatching();
  }
  void TearDown() override {
    pool_.reset();
    for (auto& [name, s] : servers_) s->Shutdown();
  }
  void Settle() { std::this_thread::sleep_for(std::chrono::milliseconds(100)); }

  VocabularyWorker workers_[3];
  std::map<std::string, std::unique_ptr<grpc::Server>> servers_;
  // Addresses "w0".."w2" name the in-process servers.
  const WorkerPool::ClientFactory make_client_ = [this](const std::string& address) {
    return std::make_unique<WorkerClient>(address, servers_.at(address)->InProcessChannel({}));
  };
  std::unique_ptr<WorkerPool> pool_;
};

TEST_F(WorkerPoolMembersTest, NewAddressesJoinAndVanishedOnesRetireAndRejoin) {
  Start({"w0"});
  pool_->SetMembers({"w0", "w1"}, make_client_);
  ASSERT_EQ(pool_->size(), 2u);
  EXPECT_EQ(pool_->client(1).address(), "w1");
  EXPECT_TRUE(pool_->Ready(1));  // probed as it joined
  EXPECT_EQ(pool_->members(), 2u);

  pool_->SetMembers({"w1"}, make_client_);  // w0's pod went away
  EXPECT_EQ(pool_->members(), 1u);
  Settle();
  EXPECT_FALSE(pool_->Ready(0));  // neither probed nor picked while retired
  for (int i = 0; i < 4; ++i) EXPECT_EQ(pool_->Pick(), 1u);

  pool_->SetMembers({"w2", "w1", "w0"}, make_client_);  // w0 is back, w2 is new
  ASSERT_EQ(pool_->size(), 3u);                         // w0 kept its place
  EXPECT_EQ(pool_->client(2).address(), "w2");
  Settle();
  EXPECT_TRUE(pool_->Ready(0));
  EXPECT_TRUE(pool_->Ready(2));
  EXPECT_EQ(pool_->members(), 3u);
}

TEST_F(WorkerPoolMembersTest, AReplicaServingAnotherVocabularyIsNeverUsed) {
  workers_[1].fingerprint = "vocab-b";
  Start({"w0"});
  pool_->SetMembers({"w0", "w1"}, make_client_);
  ASSERT_EQ(pool_->size(), 2u);
  EXPECT_FALSE(pool_->Ready(1));
  Settle();
  EXPECT_FALSE(pool_->Ready(1));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(pool_->Pick(), 0u);
}

TEST_F(WorkerPoolMembersTest, PinnedPicksSpreadByLoadBeforeAnySessionOpens) {
  workers_[0].max = 16;
  workers_[1].max = 32;  // holds twice as many
  Start({"w0", "w1"});
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // probes learn the sizes
  std::vector<ReplicaLease> leases;
  int on[2] = {0, 0};
  for (int i = 0; i < 6; ++i) {
    std::optional<size_t> r = pool_->WaitPick(absl::Now() + absl::Seconds(1), nullptr, true);
    ASSERT_TRUE(r.has_value());
    ++on[*r];
    leases.push_back(ReplicaLease::Adopt(pool_.get(), *r));
  }
  // Each pick saw the ones before it: 2 of 16 and 4 of 32 (unpinned picks of equal loads
  // would have alternated 3 and 3).
  EXPECT_EQ(on[0], 2);
  EXPECT_EQ(on[1], 4);
  leases.clear();
  EXPECT_NE(pool_->Pick(), pool_->Pick());  // the leases gave their places back
}

}  // namespace
}  // namespace tandem
