// ReplicaDiscovery over a resolver whose answers the test sets: entries' addresses merged in
// order, a failed lookup keeping what it had, the wait for a first address, and updates.
#include "services/coordinator/replica_discovery.h"

#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Answers what `answers` holds for a name; kUnavailable for a name it does not hold.
class FakeResolver final : public AddressResolver {
 public:
  void Set(const std::string& name, std::vector<std::string> addresses) {
    absl::MutexLock lock(&mutex_);
    answers_[name] = std::move(addresses);
  }
  void Forget(const std::string& name) {
    absl::MutexLock lock(&mutex_);
    answers_.erase(name);
  }
  absl::StatusOr<std::vector<std::string>> Resolve(const std::string& name) override {
    ++calls;
    absl::MutexLock lock(&mutex_);
    auto it = answers_.find(name);
    if (it == answers_.end()) return absl::UnavailableError("SERVFAIL for " + name);
    return it->second;
  }
  std::atomic<int> calls{0};

 private:
  absl::Mutex mutex_;
  std::map<std::string, std::vector<std::string>> answers_ ABSL_GUARDED_BY(mutex_);
};

TEST(ReplicaDiscoveryTest, EveryEntrysAddressesInOrderEachOnce) {
  auto resolver = std::make_shared<FakeResolver>();
  resolver->Set("target:1", {"127.0.0.1:1", "127.0.0.2:1"});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReplicaDiscovery> d,
                       ReplicaDiscovery::Create({"dns:///target:1", "127.0.0.9:5", "127.0.0.2:1"},
                                                resolver, absl::Seconds(1)));
  EXPECT_TRUE(d->dynamic());
  EXPECT_THAT(d->Refresh(), ElementsAre("127.0.0.1:1", "127.0.0.2:1", "127.0.0.9:5"));
}

TEST(ReplicaDiscoveryTest, AFailedLookupKeepsTheAddressesItHad) {
  auto resolver = std::make_shared<FakeResolver>();
  resolver->Set("target:1", {"127.0.0.1:1", "127.0.0.2:1"});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReplicaDiscovery> d,
                       ReplicaDiscovery::Create({"target:1"}, resolver, absl::Seconds(1)));
  EXPECT_THAT(d->Refresh(), ElementsAre("127.0.0.1:1", "127.0.0.2:1"));
  resolver->Forget("target:1");
  std::vector<std::string> failures;
  EXPECT_THAT(d->Refresh(&failures), ElementsAre("127.0.0.1:1", "127.0.0.2:1"));
  EXPECT_THAT(failures, ElementsAre("target:1: SERVFAIL for target:1"));
  resolver->Set("target:1", {"127.0.0.2:1"});  // a pod went away
  EXPECT_THAT(d->Refresh(), ElementsAre("127.0.0.2:1"));
}

TEST(ReplicaDiscoveryTest, AnAddressIsKnownByTheNameItResolvedFrom) {
  auto resolver = std::make_shared<FakeResolver>();
  resolver->Set("tandem-target.tandem.svc:50051", {"10.1.0.7:50051"});
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<ReplicaDiscovery> d,
      ReplicaDiscovery::Create({"dns:///tandem-target.tandem.svc:50051", "127.0.0.1:9"}, resolver,
                               absl::Seconds(1)));
  d->Refresh();
  EXPECT_EQ(d->NameOf("10.1.0.7:50051"), "tandem-target.tandem.svc:50051");
  EXPECT_EQ(d->NameOf("127.0.0.1:9"), "");  // given as an address
  EXPECT_EQ(d->NameOf("10.1.0.8:50051"), "");
}

TEST(ReplicaDiscoveryTest, StaticEntriesAreNotResolved) {
  auto resolver = std::make_shared<FakeResolver>();
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<ReplicaDiscovery> d,
      ReplicaDiscovery::Create({"127.0.0.1:4", "unix:/tmp/w.sock"}, resolver, absl::Seconds(1)));
  EXPECT_FALSE(d->dynamic());
  EXPECT_THAT(d->Refresh(), ElementsAre("127.0.0.1:4", "unix:/tmp/w.sock"));
  EXPECT_EQ(resolver->calls, 0);
}

TEST(ReplicaDiscoveryTest, AwaitAddressesWaitsForAFirstAnswerOrNamesTheEntry) {
  auto resolver = std::make_shared<FakeResolver>();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReplicaDiscovery> d,
                       ReplicaDiscovery::Create({"target:1"}, resolver, absl::Seconds(1)));
  EXPECT_THAT(d->AwaitAddresses(absl::Now() + absl::Milliseconds(300)),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("no address for worker entry target:1: target:1: SERVFAIL")));
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    resolver->Set("target:1", {"127.0.0.3:1"});
  });
  absl::StatusOr<std::vector<std::string>> a = d->AwaitAddresses(absl::Now() + absl::Seconds(10));
  later.join();
  ASSERT_OK(a.status());
  EXPECT_THAT(*a, ElementsAre("127.0.0.3:1"));
}

TEST(ReplicaDiscoveryTest, StartReportsEachIntervalsAnswer) {
  auto resolver = std::make_shared<FakeResolver>();
  resolver->Set("target:1", {"127.0.0.1:1"});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReplicaDiscovery> d,
                       ReplicaDiscovery::Create({"target:1"}, resolver, absl::Milliseconds(10)));
  absl::Mutex mutex;
  std::vector<std::string> last;
  d->Start([&](const std::vector<std::string>& a) {
    absl::MutexLock lock(&mutex);
    last = a;
  });
  resolver->Set("target:1", {"127.0.0.1:1", "127.0.0.2:1"});
  // Polls (bounded: 5 s) until the last report is `want`.
  auto seen = [&](const std::vector<std::string>& want) {
    for (int i = 0; i < 500; ++i) {
      {
        absl::MutexLock lock(&mutex);
        if (last == want) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  EXPECT_TRUE(seen({"127.0.0.1:1", "127.0.0.2:1"}));
  resolver->Set("target:1", {"127.0.0.2:1"});
  EXPECT_TRUE(seen({"127.0.0.2:1"}));
  d.reset();  // stops the thread
}

}  // namespace
}  // namespace tandem
