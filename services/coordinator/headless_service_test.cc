// Two target replicas behind one headless Service name, on loopback: the coordinator is given
// only the name (dns:///tandem-target.tandem.svc:50051), the resolver answers with the two
// workers' addresses, sessions spread over both by load, and a replica killed mid-generation
// loses nothing: its sessions re-sync on the other from the coordinator's history and every
// reply equals the one-replica reply. Real workers over real sockets.
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/coordinator/coordinator.h"
#include "services/coordinator/coordinator_stack_test_util.h"

namespace tandem {
namespace {

constexpr char kService[] = "tandem-target.tandem.svc:50051";
constexpr char kTargetModel[] = "models/stories260K/stories260K.gguf";
constexpr char kDraftModel[] = "models/stories260K/derived/stories-draft-distilled.gguf";

// What DNS would answer for the Service: the addresses of its ready pods, as the test sets.
class ServiceResolver final : public AddressResolver {
 public:
  void Set(std::vector<std::string> addresses) {
    absl::MutexLock lock(&mutex_);
    addresses_ = std::move(addresses);
  }
  absl::StatusOr<std::vector<std::string>> Resolve(const std::string& name) override {
    if (name != kService) return absl::NotFoundError(absl::StrCat("'", name, "' has no address"));
    absl::MutexLock lock(&mutex_);
    ++calls_;
    return addresses_;
  }
  // Returns once a lookup that began after this call has been answered and its update ran
  // (lookups and updates take turns on the discovery thread). Bounded: 5 s.
  bool AwaitFreshLookup() {
    absl::MutexLock lock(&mutex_);
    const int target = calls_ + 2;
    auto done = [this, target]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return calls_ >= target; };
    return mutex_.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(5));
  }

 private:
  absl::Mutex mutex_;
  std::vector<std::string> addresses_ ABSL_GUARDED_BY(mutex_);
  int calls_ ABSL_GUARDED_BY(mutex_) = 0;
};

v1::GenerateRequest Story(int i, const std::string& session) {
  static const char* kPrompts[] = {"Once upon a time",  "Tom and Sam went to the park",
                                   "The little cat",    "Lily saw a big red ball",
                                   "One day, a bird",   "The sun was hot and",
                                   "Ben had a toy car", "Mom said"};
  v1::GenerateRequest r;
  r.set_text(kPrompts[i % 8]);
  r.mutable_sampling()->set_temperature(0.0f);
  r.set_max_tokens(160);
  r.set_ignore_eos(true);
  r.set_session_id(session);
  return r;
}

struct Reply {
  absl::Status status;
  std::vector<int32_t> ids;
};

class HeadlessServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (auto* t : {&a_, &b_}) {
      *t = std::make_unique<testing::TestWorker>(WorkerRole::kTarget, kTargetModel, 8);
      (*t)->Serve();
      ASSERT_NE((*t)->server, nullptr);
    }
    draft_ = std::make_unique<testing::TestWorker>(WorkerRole::kDraft, kDraftModel, 16);
    draft_->Serve();
    ASSERT_NE(draft_->server, nullptr);
    resolver_ = std::make_shared<ServiceResolver>();
    resolver_->Set({Address(*a_)});  // one pod ready so far
    CoordinatorOptions& options = options_;
    options.targets = {absl::StrCat("dns:///", kService)};
    options.drafts = {Address(*draft_)};
    options.resolver = resolver_;
    options.resolve_interval = absl::Milliseconds(20);
    // Probes only at the start and as a pod joins: a probe that lands among requests reports
    // their queued prefills as load (rightly), for a probe interval, and would make the split
    // depend on its timing; without one the choice rests on the sessions pinned, which the
    // pool counts as it picks.
    options.pool.probe_interval = absl::Seconds(30);
    options.pool.probe_timeout = absl::Milliseconds(500);
    options.worker_wait = absl::Seconds(10);
    metrics_ = std::make_unique<CoordinatorMetrics>(registry_);
    ASSERT_OK_AND_ASSIGN(coordinator_, Coordinator::Create(options, metrics_.get()));
  }
  void TearDown() override {
    coordinator_.reset();
    for (auto* t : {&a_, &b_, &draft_}) {
      if (*t != nullptr && (*t)->server != nullptr) (*t)->server->Shutdown(Now());
    }
  }
  static std::string Address(const testing::TestWorker& w) {
    return absl::StrCat("127.0.0.1:", w.port);
  }
  static std::chrono::system_clock::time_point Now() { return std::chrono::system_clock::now(); }

  // One request; `on_delta` after each delta (on the caller's thread).
  Reply Generate(const v1::GenerateRequest& r, const std::function<void()>& on_delta = nullptr) {
    Reply run;
    run.status = coordinator_->Generate(
        r,
        [&](const v1::GenerateResponse& response) {
          if (response.has_delta()) {
            run.ids.insert(run.ids.end(), response.delta().token_ids().begin(),
                           response.delta().token_ids().end());
            if (on_delta) on_delta();
          }
          return true;
        },
        [] { return false; });
    return run;
  }

  prometheus::Registry registry_;
  std::unique_ptr<testing::TestWorker> a_, b_, draft_;
  std::shared_ptr<ServiceResolver> resolver_;
  std::unique_ptr<CoordinatorMetrics> metrics_;
  CoordinatorOptions options_;
  std::unique_ptr<Coordinator> coordinator_;
};

TEST_F(HeadlessServiceTest, EightSessionsSpreadFourAndFourAndAKilledReplicaLosesNone) {
  constexpr int kSessions = 8;
  // The one-replica replies: the Service has one pod.
  std::vector<std::vector<int32_t>> alone(kSessions);
  for (int i = 0; i < kSessions; ++i) {
    Reply run = Generate(Story(i, ""));
    ASSERT_OK(run.status) << i;
    ASSERT_EQ(run.ids.size(), 160u);
    alone[i] = run.ids;
  }
  EXPECT_EQ(b_->engine->active_sessions(), 0);
  // A coordinator that starts now, its first probe finding A idle (the one that ran the
  // requests above may have probed A amid them).
  coordinator_.reset();
  ASSERT_OK_AND_ASSIGN(coordinator_, Coordinator::Create(options_, metrics_.get()));
  EXPECT_EQ(coordinator_->max_concurrent_requests(), 8);  // A's sessions

  // A second pod becomes ready: the next lookup makes it a replica.
  resolver_->Set({Address(*a_), Address(*b_)});
  ASSERT_TRUE(resolver_->AwaitFreshLookup());
  EXPECT_EQ(coordinator_->max_concurrent_requests(), 16);  // and B's

  // Eight concurrent sessions; once each has its first tokens, replica A is killed.
  std::atomic<int> started{0}, finished{0};
  std::vector<Reply> runs(kSessions);
  std::vector<std::thread> clients;
  for (int i = 0; i < kSessions; ++i) {
    clients.emplace_back([&, i] {
      bool first = true;
      runs[i] = Generate(Story(i, absl::StrCat("s", i)), [&] {
        if (first) ++started;
        first = false;
        std::this_thread::sleep_for(std::chrono::milliseconds(3));  // a client reading slowly
      });
      ++finished;
    });
  }
  for (int i = 0; i < 3000 && started < kSessions; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const int on_a = a_->engine->active_sessions();
  const int on_b = b_->engine->active_sessions();
  const int finished_before_kill = finished;
  a_->server->Shutdown(Now());  // the pod dies: its streams break, its port closes
  for (std::thread& t : clients) t.join();

  EXPECT_EQ(started, kSessions);
  EXPECT_EQ(finished_before_kill, 0);  // killed mid-generation
  EXPECT_EQ(on_a, 4);
  EXPECT_EQ(on_b, 4);
  for (int i = 0; i < kSessions; ++i) {
    ASSERT_OK(runs[i].status) << "session " << i;
    EXPECT_EQ(runs[i].ids, alone[i]) << "session " << i;
  }
  // Every named session now lives on B, A's four re-synced there.
  EXPECT_EQ(b_->AwaitSessions(kSessions), kSessions);
}

TEST_F(HeadlessServiceTest, APodThatLeavesTheServiceTakesNoNewSessionsAndItsCapacityGoes) {
  resolver_->Set({Address(*a_), Address(*b_)});
  ASSERT_TRUE(resolver_->AwaitFreshLookup());
  ASSERT_TRUE(resolver_->AwaitFreshLookup());  // the poller has probed B's size too
  EXPECT_EQ(coordinator_->max_concurrent_requests(), 16);
  resolver_->Set({Address(*b_)});  // A is no longer listed (e.g. terminating)
  ASSERT_TRUE(resolver_->AwaitFreshLookup());
  EXPECT_EQ(coordinator_->max_concurrent_requests(), 8);
  for (int i = 0; i < 4; ++i) {
    v1::GenerateRequest r = Story(i, absl::StrCat("late", i));
    r.set_max_tokens(8);
    ASSERT_OK(Generate(r).status);
  }
  EXPECT_EQ(a_->engine->active_sessions(), 0);
  EXPECT_EQ(b_->engine->active_sessions(), 4);
}

TEST_F(HeadlessServiceTest, ASessionOnAPodThatLeftMovesAtItsNextRequest) {
  v1::GenerateRequest first = Story(2, "moving");
  first.set_max_tokens(8);
  ASSERT_OK(Generate(first).status);  // on A, the only pod
  ASSERT_EQ(a_->engine->active_sessions(), 1);
  resolver_->Set({Address(*b_)});  // A is replaced by B (a rolling update)
  ASSERT_TRUE(resolver_->AwaitFreshLookup());
  v1::GenerateRequest next = Story(2, "moving");
  next.set_max_tokens(24);
  Reply moved = Generate(next);
  ASSERT_OK(moved.status);
  // Re-synced on B from the history: the same turn as a session that never moved.
  v1::GenerateRequest control = first;
  control.set_session_id("control");
  ASSERT_OK(Generate(control).status);
  next.set_session_id("control");
  Reply stayed = Generate(next);
  ASSERT_OK(stayed.status);
  ASSERT_EQ(moved.ids.size(), 24u);
  EXPECT_EQ(moved.ids, stayed.ids);
  EXPECT_EQ(b_->AwaitSessions(2), 2);
  EXPECT_EQ(a_->AwaitSessions(0), 0);  // its stream on A was closed
}

TEST_F(HeadlessServiceTest, APodGoneSinceTheLookupDoesNotHoldUpTheStart) {
  auto resolver = std::make_shared<ServiceResolver>();
  resolver->Set({"127.0.0.1:1", Address(*b_)});  // nothing listens on port 1
  CoordinatorOptions options;
  options.targets = {absl::StrCat("dns:///", kService)};
  options.resolver = resolver;
  options.pool.probe_timeout = absl::Milliseconds(500);
  options.worker_wait = absl::Seconds(60);
  CoordinatorMetrics metrics(registry_);
  const absl::Time start = absl::Now();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Coordinator> c, Coordinator::Create(options, &metrics));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_EQ(c->max_concurrent_requests(), 8);  // B's sessions
  v1::GenerateRequest r = Story(0, "");
  r.set_max_tokens(4);
  EXPECT_OK(c->Generate(
      r, [](const v1::GenerateResponse&) { return true; }, [] { return false; }));
}

}  // namespace
}  // namespace tandem
