// The coordinator at its limits, over real workers served in process: requests beyond the
// targets' sessions queue (FIFO, bounded, within their deadline) instead of failing; idle
// named sessions make room (least recently used, and after session_idle) on the coordinator
// and on the workers; oversized requests are refused before any work.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "grpcpp/server.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/coordinator/coordinator.h"
#include "services/coordinator/coordinator_stack_test_util.h"
#include "workers/worker_service.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kTarget[] = "models/stories260K/stories260K.gguf";
constexpr char kDraft[] = "models/stories260K/derived/stories-draft-distilled.gguf";

// A worker served by itself over loopback TCP: failover re-attaches need a real channel.
struct Worker : testing::TestWorker {
  Worker(WorkerRole role, const std::string& model, int max_sessions, int64_t kv_budget = 0)
      : TestWorker(role, model, max_sessions, absl::Minutes(10), kv_budget) {
    Serve();
  }
  std::unique_ptr<WorkerClient> Client() { return TcpClient(); }
};

// Lets requests stop at their first delta until released.
class Gate {
 public:
  void Enter() {
    ++inside_;
    for (int i = 0; i < 3000 && !open_; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  void Open() { open_ = true; }
  int inside() const { return inside_; }

 private:
  std::atomic<int> inside_{0};
  std::atomic<bool> open_{false};
};

class CoordinatorCapacityTest : public ::testing::Test {
 protected:
  void Start(int worker_sessions, CoordinatorOptions options = CoordinatorOptions(),
             bool with_draft = true) {
    target_ = std::make_unique<Worker>(WorkerRole::kTarget, kTarget, worker_sessions, kv_budget_);
    ASSERT_NE(target_->server, nullptr);
    std::vector<std::unique_ptr<WorkerClient>> targets, drafts;
    targets.push_back(target_->Client());
    if (with_draft) {
      draft_ = std::make_unique<Worker>(WorkerRole::kDraft, kDraft, worker_sessions);
      ASSERT_NE(draft_->server, nullptr);
      drafts.push_back(draft_->Client());
    }
    metrics_ = std::make_unique<CoordinatorMetrics>(registry_);
    absl::StatusOr<std::unique_ptr<Coordinator>> c =
        Coordinator::Create(options, std::move(targets), std::move(drafts), metrics_.get());
    ASSERT_TRUE(c.ok()) << c.status();
    coordinator_ = std::move(*c);
  }

  // Runs a request; `gate` (optional) holds it at its first delta.
  absl::StatusOr<std::vector<int32_t>> Generate(const v1::GenerateRequest& request,
                                                Gate* gate = nullptr,
                                                absl::Time deadline = absl::InfiniteFuture(),
                                                const std::function<bool()>& cancelled = nullptr,
                                                v1::GenerationResult* final = nullptr) {
    std::vector<int32_t> ids;
    bool first = true;
    absl::Status status = coordinator_->Generate(
        request,
        [&](const v1::GenerateResponse& r) {
          if (r.has_delta()) {
            if (first && gate != nullptr) gate->Enter();
            first = false;
            ids.insert(ids.end(), r.delta().token_ids().begin(), r.delta().token_ids().end());
          } else if (final != nullptr) {
            *final = r.final();
          }
          return true;
        },
        cancelled ? cancelled : [] { return false; }, deadline);
    if (!status.ok()) return status;
    return ids;
  }

  static v1::GenerateRequest Greedy(const std::string& text, int max_tokens,
                                    const std::string& session = "") {
    v1::GenerateRequest request;
    request.set_text(text);
    request.mutable_sampling()->set_temperature(0);
    request.set_max_tokens(max_tokens);
    request.set_session_id(session);
    return request;
  }

  // Bounded wait for a condition the test's threads bring about.
  static bool Eventually(const std::function<bool()>& done) {
    for (int i = 0; i < 1000; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return done();
  }

  int64_t kv_budget_ = 0;  // the target's, bytes
  prometheus::Registry registry_;
  std::unique_ptr<Worker> target_, draft_;
  std::unique_ptr<CoordinatorMetrics> metrics_;
  std::unique_ptr<Coordinator> coordinator_;
};

TEST_F(CoordinatorCapacityTest, SeventeenConcurrentRequestsOnASixteenSessionWorkerAllComplete) {
  Start(16);
  EXPECT_EQ(coordinator_->max_concurrent_requests(), 16);  // learnt from the target's Describe
  constexpr int kClients = 17;
  const std::vector<std::string> prompts = {"Once upon a time", "Tom and Sam went to the park",
                                            "The cat"};
  std::vector<std::vector<int32_t>> alone;
  for (const std::string& p : prompts) {
    ASSERT_OK_AND_ASSIGN(std::vector<int32_t> ids, Generate(Greedy(p, 24)));
    alone.push_back(ids);
  }
  Gate gate;
  std::vector<absl::StatusOr<std::vector<int32_t>>> results(kClients, absl::UnknownError(""));
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back(
        [&, i] { results[i] = Generate(Greedy(prompts[i % prompts.size()], 24), &gate); });
  }
  // Sixteen run (held at their first token), the seventeenth waits in the queue.
  EXPECT_TRUE(Eventually([&] {
    return gate.inside() == 16 && metrics_->queued_requests.Value() == 1;
  })) << gate.inside()
      << " inside, " << metrics_->queued_requests.Value() << " queued";
  EXPECT_EQ(coordinator_->active_sessions(), 16);
  EXPECT_EQ(metrics_->active_sessions.Value(), 16);  // one-off requests count
  gate.Open();
  for (std::thread& t : clients) t.join();
  for (int i = 0; i < kClients; ++i) {
    ASSERT_TRUE(results[i].ok()) << "client " << i << ": " << results[i].status();
    EXPECT_EQ(*results[i], alone[i % prompts.size()]) << "client " << i;
  }
  EXPECT_EQ(metrics_->queued_requests.Value(), 0);
  EXPECT_EQ(coordinator_->active_sessions(), 0);
  EXPECT_EQ(metrics_->active_sessions.Value(), 0);
  EXPECT_EQ(target_->AwaitSessions(0), 0);
}

// One block of stories260K's f16 cache: 16 positions x 5 layers x 4 KV heads x 8 x 2 x 2 bytes.
constexpr int64_t kKvBlockBytes = 10240;

TEST_F(CoordinatorCapacityTest, RequestsRunOnlyWhileTheTargetsKvBudgetHoldsWhatEachMayNeed) {
  // 40 blocks; a request of 5 prompt tokens + 160 tokens + a round (4 guesses and the pending
  // token) needs 170 positions, 11 blocks: three fit.
  kv_budget_ = 40 * kKvBlockBytes;
  Start(16);
  const std::string prompt = "Once upon a time";
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> alone, Generate(Greedy(prompt, 160)));
  Gate gate;
  constexpr int kClients = 6;
  std::vector<absl::StatusOr<std::vector<int32_t>>> results(kClients, absl::UnknownError(""));
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] { results[i] = Generate(Greedy(prompt, 160), &gate); });
  }
  // Sixteen sessions, but the blocks of three: the others wait in the queue.
  EXPECT_TRUE(Eventually([&] {
    return gate.inside() == 3 && metrics_->queued_requests.Value() == 3;
  })) << gate.inside()
      << " inside, " << metrics_->queued_requests.Value() << " queued";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(gate.inside(), 3);
  gate.Open();
  for (std::thread& t : clients) t.join();
  for (int i = 0; i < kClients; ++i) {
    ASSERT_TRUE(results[i].ok()) << "client " << i << ": " << results[i].status();
    EXPECT_EQ(*results[i], alone) << "client " << i;
  }
}

TEST_F(CoordinatorCapacityTest, ARequestNoTargetsKvBudgetCouldHoldIsRefusedBeforeAnyToken) {
  kv_budget_ = 12 * kKvBlockBytes;  // 192 positions; the context is 256
  Start(4);
  Gate never;
  EXPECT_THAT(Generate(Greedy("Once upon a time", 250), &never),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("256 KV positions"), HasSubstr("16 blocks"),
                             HasSubstr("--kv-budget-mb"), HasSubstr("holds: 12 blocks"))));
  EXPECT_EQ(never.inside(), 0);
  EXPECT_OK(Generate(Greedy("Once upon a time", 100)).status());  // 7 blocks: fits
}

TEST_F(CoordinatorCapacityTest, AFullQueueIsResourceExhaustedAndAnExpiredWaitDeadlineExceeded) {
  CoordinatorOptions options;
  options.max_queued_requests = 1;
  Start(1, options);
  Gate gate;
  absl::StatusOr<std::vector<int32_t>> running = absl::UnknownError("");
  std::thread holder([&] { running = Generate(Greedy("Once upon a time", 8), &gate); });
  ASSERT_TRUE(Eventually([&] { return gate.inside() == 1; }));
  absl::Status waited;
  std::thread waiter([&] {
    waited =
        Generate(Greedy("The cat", 8), nullptr, absl::Now() + absl::Milliseconds(400)).status();
  });
  ASSERT_TRUE(Eventually([&] { return metrics_->queued_requests.Value() == 1; }));
  EXPECT_THAT(Generate(Greedy("The dog", 8)),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("--max-queued-requests")));
  waiter.join();
  EXPECT_THAT(waited,
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("in the admission queue")));
  gate.Open();
  holder.join();
  EXPECT_OK(running.status());
  EXPECT_OK(Generate(Greedy("The dog", 8)).status());  // and the next one runs again
}

TEST_F(CoordinatorCapacityTest, ACancelledRequestLeavesTheQueueAndAnotherFreesItsSession) {
  Start(1);
  Gate gate;
  absl::StatusOr<std::vector<int32_t>> running = absl::UnknownError("");
  std::atomic<bool> cancel{false};
  std::thread holder([&] {
    running = Generate(Greedy("Once upon a time", 40, "chat-a"), &gate, absl::InfiniteFuture(),
                       [&] { return cancel.load(); });
  });
  ASSERT_TRUE(Eventually([&] { return gate.inside() == 1; }));
  std::atomic<bool> leave{false};
  absl::Status queued;
  std::thread waiter([&] {
    queued = Generate(Greedy("The cat", 8), nullptr, absl::InfiniteFuture(), [&] {
               return leave.load();
             }).status();
  });
  ASSERT_TRUE(Eventually([&] { return metrics_->queued_requests.Value() == 1; }));
  leave = true;  // the queued client goes away
  waiter.join();
  EXPECT_THAT(queued, StatusIs(absl::StatusCode::kCancelled, HasSubstr("queued")));
  EXPECT_EQ(metrics_->queued_requests.Value(), 0);
  cancel = true;  // Ctrl-C in the running named session's client
  gate.Open();
  holder.join();
  EXPECT_THAT(running, StatusIs(absl::StatusCode::kCancelled));
  EXPECT_EQ(coordinator_->active_sessions(), 0);
  EXPECT_EQ(target_->AwaitSessions(0), 0);
  EXPECT_EQ(draft_->AwaitSessions(0), 0);
  EXPECT_OK(Generate(Greedy("The cat", 8)).status());
}

TEST_F(CoordinatorCapacityTest, IdleNamedSessionsHoldingEveryWorkerSlotLockNobodyOut) {
  constexpr int kSlots = 4;
  Start(kSlots);
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> expected,
                       Generate(Greedy("Once upon a time", 24)));  // one-off: freed at the end
  for (int i = 0; i < kSlots; ++i) {
    ASSERT_OK(Generate(Greedy("The cat", 2, "idle-" + std::to_string(i))).status());
  }
  EXPECT_EQ(target_->engine->active_sessions(), kSlots);  // every slot held by an idle session
  EXPECT_EQ(draft_->engine->active_sessions(), kSlots);
  // Others are served: the least recently used idle sessions let go of their streams.
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> one_off, Generate(Greedy("Once upon a time", 24)));
  EXPECT_EQ(one_off, expected);
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> named,
                       Generate(Greedy("Once upon a time", 24, "newcomer")));
  EXPECT_EQ(named, expected);
  EXPECT_EQ(target_->AwaitSessions(kSlots), kSlots);
  // The coordinator made the room itself, so no worker had to evict a session.
  EXPECT_EQ(target_->metrics->evicted_sessions.Value(), 0);
  EXPECT_EQ(draft_->metrics->evicted_sessions.Value(), 0);
  // A session that let go is re-filled from the coordinator's history, draft included.
  v1::GenerateRequest again = Greedy("Once upon a time", 24, "idle-0");
  again.set_require_existing_session(true);
  v1::GenerationResult final;
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> refilled,
                       Generate(again, nullptr, absl::InfiniteFuture(), nullptr, &final));
  EXPECT_EQ(refilled, expected);
  EXPECT_FALSE(final.speculation().draft_failed());
  EXPECT_GT(final.speculation().drafted_tokens(), 0);
  EXPECT_EQ(coordinator_->active_sessions(), kSlots + 1);
  EXPECT_EQ(target_->AwaitSessions(kSlots), kSlots);
}

// Requests that arrive together beside idle named sessions: one may take the idle streams
// another's slot needs; that one must not attach before those streams are closed, or the
// worker would evict a session to make room.
TEST_F(CoordinatorCapacityTest, ConcurrentRequestsBesideIdleNamedSessionsNeverMakeAWorkerEvict) {
  constexpr int kSlots = 4;
  Start(kSlots);
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> expected, Generate(Greedy("Once upon a time", 4)));
  for (int round = 0; round < 8; ++round) {
    for (int i = 0; i < kSlots; ++i) {  // every slot held by an idle session again
      ASSERT_OK(Generate(Greedy("The cat", 1, "idle-" + std::to_string(i))).status());
    }
    std::vector<absl::StatusOr<std::vector<int32_t>>> results(2 * kSlots, absl::UnknownError(""));
    std::vector<std::thread> clients;
    for (int i = 0; i < 2 * kSlots; ++i) {
      clients.emplace_back([&, i] { results[i] = Generate(Greedy("Once upon a time", 4)); });
    }
    for (std::thread& t : clients) t.join();
    for (int i = 0; i < 2 * kSlots; ++i) {
      ASSERT_TRUE(results[i].ok()) << "round " << round << ", client " << i << ": "
                                   << results[i].status();
      EXPECT_EQ(*results[i], expected);
    }
    ASSERT_EQ(target_->metrics->evicted_sessions.Value(), 0) << "round " << round;
    ASSERT_EQ(draft_->metrics->evicted_sessions.Value(), 0) << "round " << round;
  }
}

TEST_F(CoordinatorCapacityTest, AWorkerFullOfAnotherClientsSessionsEvictsForTheCoordinator) {
  constexpr int kSlots = 2;
  Start(kSlots);
  // Someone else (another coordinator) holds every slot of both workers with idle sessions.
  std::vector<std::unique_ptr<WorkerStream>> others;
  for (Worker* worker : {target_.get(), draft_.get()}) {
    std::unique_ptr<WorkerClient> client = worker->Client();
    for (int i = 0; i < kSlots; ++i) {
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<WorkerStream> s, client->Attach("other", 0));
      others.push_back(std::move(s));
    }
  }
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> ids, Generate(Greedy("Once upon a time", 24)));
  EXPECT_EQ(ids.size(), 24u);
  EXPECT_EQ(target_->metrics->evicted_sessions.Value(), 1);
  EXPECT_EQ(draft_->metrics->evicted_sessions.Value(), 1);
}

TEST_F(CoordinatorCapacityTest, ASessionAWorkerEvictedIsRefilledFromTheHistoryOnItsNextRequest) {
  constexpr int kSlots = 2;
  Start(kSlots);
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> expected,
                       Generate(Greedy("Once upon a time", 24, "mine")));
  // Another client fills both workers: "mine" is the least recently used idle session there.
  std::vector<std::unique_ptr<WorkerStream>> others;
  for (Worker* worker : {target_.get(), draft_.get()}) {
    std::unique_ptr<WorkerClient> client = worker->Client();
    for (int i = 0; i < kSlots; ++i) {
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<WorkerStream> s, client->Attach("other", 0));
      others.push_back(std::move(s));
    }
  }
  EXPECT_EQ(target_->metrics->evicted_sessions.Value(), 1);
  v1::GenerateRequest again = Greedy("Once upon a time", 24, "mine");
  again.set_require_existing_session(true);
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> refilled, Generate(again));
  EXPECT_EQ(refilled, expected);
}

TEST_F(CoordinatorCapacityTest, TheLeastRecentlyUsedIdleNamedSessionMakesRoomUnderMaxSessions) {
  CoordinatorOptions options;
  options.max_sessions = 2;
  Start(4, options);
  ASSERT_OK(Generate(Greedy("The cat", 2, "a")).status());
  ASSERT_OK(Generate(Greedy("The cat", 2, "b")).status());
  ASSERT_OK(Generate(Greedy("The cat", 2, "a")).status());  // b is now the older one
  ASSERT_OK(Generate(Greedy("The cat", 2, "c")).status());  // instead of RESOURCE_EXHAUSTED
  EXPECT_EQ(coordinator_->active_sessions(), 2);
  v1::GenerateRequest b = Greedy("The cat", 2, "b");
  b.set_require_existing_session(true);
  EXPECT_THAT(Generate(b), StatusIs(absl::StatusCode::kNotFound, HasSubstr("'b'")));
  v1::GenerateRequest a = Greedy("The cat", 2, "a");
  a.set_require_existing_session(true);
  EXPECT_OK(Generate(a).status());
  EXPECT_EQ(target_->AwaitSessions(2), 2);  // b's worker caches went with it
}

TEST_F(CoordinatorCapacityTest, NamedSessionsIdleLongerThanSessionIdleAreForgotten) {
  CoordinatorOptions options;
  options.session_idle = absl::Milliseconds(200);
  Start(4, options, /*with_draft=*/false);
  ASSERT_OK(Generate(Greedy("The cat", 2, "old")).status());
  EXPECT_EQ(coordinator_->active_sessions(), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_OK(Generate(Greedy("The cat", 2, "fresh")).status());
  EXPECT_EQ(coordinator_->active_sessions(), 1);  // "old" is gone, "fresh" stays
  v1::GenerateRequest old = Greedy("The cat", 2, "old");
  old.set_require_existing_session(true);
  EXPECT_THAT(Generate(old), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_EQ(target_->AwaitSessions(1), 1);
}

TEST_F(CoordinatorCapacityTest, OversizedRequestsAreRefusedBeforeAnyWork) {
  Start(4, CoordinatorOptions(), /*with_draft=*/false);
  struct Case {
    std::string name;
    v1::GenerateRequest request;
    absl::StatusCode code;
    std::string message;
  };
  std::vector<Case> cases;
  cases.push_back({"10 MB prompt", Greedy(std::string(10 << 20, 'a'), 4),
                   absl::StatusCode::kInvalidArgument, "text is 10485760 bytes"});
  v1::GenerateRequest long_id = Greedy("The cat", 4, std::string(1 << 20, 's'));
  cases.push_back({"1 MB session id", long_id, absl::StatusCode::kInvalidArgument,
                   "session_id is 1048576 bytes; the limit is 128"});
  long_id.set_session_id(std::string(8192, 's'));
  long_id.set_require_existing_session(true);
  cases.push_back(
      {"8 KB session id", long_id, absl::StatusCode::kInvalidArgument, "session_id is 8192 bytes"});
  v1::GenerateRequest ids;
  for (int i = 0; i < 257; ++i) ids.mutable_token_ids()->add_ids(5);
  cases.push_back(
      {"ids beyond the context", ids, absl::StatusCode::kOutOfRange, "exceeds the context of 256"});
  v1::GenerateRequest stops = Greedy("The cat", 4);
  for (int i = 0; i < 17; ++i) stops.add_stop_strings("x");
  cases.push_back({"17 stop strings", stops, absl::StatusCode::kInvalidArgument,
                   "stop_strings is 17 strings; the limit is 16"});
  v1::GenerateRequest chat;
  for (int i = 0; i < 1025; ++i) chat.mutable_chat()->add_messages()->set_content("hi");
  cases.push_back({"1025 chat messages", chat, absl::StatusCode::kInvalidArgument,
                   "chat.messages is 1025 messages; the limit is 1024"});
  for (const Case& c : cases) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THAT(Generate(c.request), StatusIs(c.code, HasSubstr(c.message))) << c.name;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1)) << c.name;
    EXPECT_EQ(target_->engine->active_sessions(), 0) << c.name;
  }
  EXPECT_THAT(coordinator_->CloseSession(std::string(8192, 's')),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("session_id is 8192")));
  v1::TokenizeRequest tokenize;
  tokenize.set_text(std::string(2 << 20, 'a'));
  EXPECT_THAT(coordinator_->Tokenize(tokenize),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("text is 2097152 bytes")));
}

}  // namespace
}  // namespace tandem
