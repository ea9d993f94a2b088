// A draft that answers late is slow, not failed: its answers are used, the request keeps it
// (no draft_failed) and tandem_draft_calls_total counts its calls "slow". Only a draft that
// does not answer within its liveness bound is dropped ("failed"). Either way the greedy text
// is the target's own. Before, any call past 4 × p95 (floor 50 ms) dropped the draft: under
// load 3 of 8 requests lost a draft that was alive and batching.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
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

// A draft worker that answers every Draft with no guesses (always valid), the first
// `fast_calls` at once and every later one after `delay`.
class LateDraft final : public testing::FakeDraftWorker {
 public:
  LateDraft(const WorkerEngine& model, int fast_calls, absl::Duration delay)
      : FakeDraftWorker(model), fast_calls_(fast_calls), delay_(delay) {}

  grpc::Status Attach(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::SessionResponse, v1::SessionRequest>* stream) override {
    return testing::AnswerSession(
        stream, [this](const v1::SessionRequest& request, v1::SessionResponse* response) {
          if (!request.has_draft()) return;
          if (++calls_ > fast_calls_) absl::SleepFor(delay_);
          response->mutable_draft();
        });
  }

 private:
  const int fast_calls_;
  const absl::Duration delay_;
  std::atomic<int> calls_{0};
};

struct Reply {
  std::vector<int32_t> ids;
  v1::GenerationResult final;
};

Reply Generate(Coordinator& coordinator, bool speculate) {
  v1::GenerateRequest request;
  request.set_text("Once upon a time");
  request.mutable_sampling()->set_temperature(0);
  request.set_max_tokens(10);
  request.mutable_speculation()->set_enabled(speculate);
  Reply run;
  const absl::Status status = coordinator.Generate(
      request,
      [&](const v1::GenerateResponse& r) {
        if (r.has_delta()) {
          run.ids.insert(run.ids.end(), r.delta().token_ids().begin(), r.delta().token_ids().end());
        }
        if (r.has_final()) run.final = r.final();
        return true;
      },
      [] { return false; }, absl::Now() + absl::Seconds(60));
  EXPECT_TRUE(status.ok()) << status;
  return run;
}

TEST(SlowDraftTest, ALateAnswerIsSlowAndKeptOnlyNoAnswerWithinTheLivenessBoundFails) {
  testing::TestWorker target(WorkerRole::kTarget, "models/stories260K/stories260K.gguf");
  target.Serve();
  ASSERT_NE(target.server, nullptr);
  struct Case {
    std::string name;
    absl::Duration delay;  // of every draft call after the fast ones
    bool draft_failed;
    bool slow_calls;
  };
  // The fast calls answer in well under a millisecond: SlowAfter is the 50 ms floor, the
  // liveness bound its 700 ms floor.
  const std::vector<Case> cases = {
      {"answers at once", absl::ZeroDuration(), false, false},
      {"answers in 300 ms: slow", absl::Milliseconds(300), false, true},
      {"answers in 2 s: failed", absl::Seconds(2), true, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    // The draft's sync and its first 4 draft calls teach the latency (min_samples 4).
    LateDraft draft(*target.engine, 4, c.delay);
    std::unique_ptr<grpc::Server> draft_server = testing::ServeInProcess(&draft);
    std::vector<std::unique_ptr<WorkerClient>> targets, drafts;
    targets.push_back(target.Client("target"));
    drafts.push_back(testing::InProcessClient("draft", *draft_server));
    prometheus::Registry registry;
    CoordinatorMetrics metrics(registry);
    CoordinatorOptions options;
    options.continue_tokens = 0;  // one round per token: many draft calls
    options.pool.draft_deadline.floor = absl::Milliseconds(50);
    options.pool.draft_deadline.liveness_floor = absl::Milliseconds(700);
    options.pool.draft_deadline.cold_deadline = absl::Seconds(5);
    ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<Coordinator> coordinator,
        Coordinator::Create(options, std::move(targets), std::move(drafts), &metrics));
    const Reply alone = Generate(*coordinator, false);
    const Reply spec = Generate(*coordinator, true);
    EXPECT_EQ(spec.ids, alone.ids);
    EXPECT_EQ(alone.final.speculation().final_draft_tokens(), 0);  // speculation was off
    ASSERT_EQ(spec.ids.size(), 10u);
    EXPECT_EQ(spec.final.speculation().draft_failed(), c.draft_failed);
    EXPECT_EQ(metrics.DraftCalls("failed").Value(), c.draft_failed ? 1 : 0);
    EXPECT_EQ(metrics.DraftCalls("slow").Value() > 0, c.slow_calls);
    EXPECT_GE(metrics.DraftCalls("ok").Value(), 5);  // the sync and the fast calls
    // A draft that failed reports no k in use; one that is slow keeps its k.
    EXPECT_EQ(spec.final.speculation().final_draft_tokens(), c.draft_failed ? 0 : 4);
    coordinator.reset();
    draft_server->Shutdown();
  }
  target.server->Shutdown();
}

}  // namespace
}  // namespace tandem
