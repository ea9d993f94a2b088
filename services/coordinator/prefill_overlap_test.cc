// The coordinator prefills the target and the draft at once (round_driver.h): the draft's sync
// is sent while the target's is still unanswered. Before, the draft's sync waited for the
// target's answer, so a long prompt cost the two prefills one after the other.
#include <atomic>
#include <chrono>
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

// What the two fake workers saw.
struct Rendezvous {
  std::atomic<bool> draft_synced{false};
  std::atomic<bool> overlapped{false};  // the draft's sync came while the target's was open
};

// A verify keeps no guess and ends the reply with `stop_token`; a draft has no guesses.
testing::FakeAnswer StopAt(int32_t stop_token) {
  return [stop_token](const v1::SessionRequest& request, v1::SessionResponse* response) {
    if (request.has_draft()) {
      response->mutable_draft();
      return;
    }
    response->mutable_verify()->set_accepted_count(0);
    response->mutable_verify()->set_next_token(stop_token);
  };
}

// The target as the coordinator sees it (a real worker's Describe), whose prefill sync
// answers only once the draft's sync has arrived, or after 2 s.
class WaitingTarget final : public v1::Worker::Service {
 public:
  WaitingTarget(WorkerService* real, int32_t stop_token, Rendezvous* seen)
      : real_(real), stop_token_(stop_token), seen_(seen) {}
  grpc::Status Describe(grpc::ServerContext* context, const v1::DescribeRequest* request,
                        v1::DescribeResponse* response) override {
    return real_->Describe(context, request, response);
  }
  grpc::Status Attach(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::SessionResponse, v1::SessionRequest>* stream) override {
    auto wait_for_draft = [this] {
      for (int i = 0; i < 400 && !seen_->draft_synced; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      if (seen_->draft_synced) seen_->overlapped = true;
    };
    return testing::AnswerSession(stream, StopAt(stop_token_), wait_for_draft);
  }

 private:
  WorkerService* real_;
  int32_t stop_token_;
  Rendezvous* seen_;
};

// A draft describing the target's own model, whose syncs are noted.
class NotingDraft final : public testing::FakeDraftWorker {
 public:
  NotingDraft(const WorkerEngine& model, Rendezvous* seen) : FakeDraftWorker(model), seen_(seen) {}
  grpc::Status Attach(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::SessionResponse, v1::SessionRequest>* stream) override {
    return testing::AnswerSession(stream, StopAt(-1), [this] { seen_->draft_synced = true; });
  }

 private:
  Rendezvous* seen_;
};

TEST(PrefillOverlapTest, TheDraftSyncsWhileTheTargetsPrefillIsUnanswered) {
  testing::TestWorker real(WorkerRole::kTarget, "models/stories260K/stories260K.gguf");
  real.Serve();
  ASSERT_NE(real.server, nullptr);
  Rendezvous seen;
  constexpr int32_t kEos = 2;
  WaitingTarget target(real.service.get(), kEos, &seen);
  NotingDraft draft(*real.engine, &seen);
  std::unique_ptr<grpc::Server> target_server = testing::ServeInProcess(&target);
  std::unique_ptr<grpc::Server> draft_server = testing::ServeInProcess(&draft);
  std::vector<std::unique_ptr<WorkerClient>> targets, drafts;
  targets.push_back(testing::InProcessClient("target", *target_server));
  drafts.push_back(testing::InProcessClient("draft", *draft_server));
  prometheus::Registry registry;
  CoordinatorMetrics metrics(registry);
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Coordinator> coordinator,
      Coordinator::Create(CoordinatorOptions(), std::move(targets), std::move(drafts), &metrics));
  v1::GenerateRequest request;
  for (int32_t id : {1, 403, 407, 261, 378}) request.mutable_token_ids()->add_ids(id);
  request.mutable_sampling()->set_temperature(0);
  request.set_max_tokens(8);
  v1::GenerationResult final;
  const absl::Status status = coordinator->Generate(
      request,
      [&](const v1::GenerateResponse& r) {
        if (r.has_final()) final = r.final();
        return true;
      },
      [] { return false; }, absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_TRUE(seen.draft_synced);
  EXPECT_TRUE(seen.overlapped) << "the draft's prefill waited for the target's";
  EXPECT_EQ(final.finish_reason(), v1::FINISH_REASON_STOP_TOKEN);
  EXPECT_FALSE(final.speculation().draft_failed());
  coordinator.reset();
  target_server->Shutdown();
  draft_server->Shutdown();
  real.server->Shutdown();
}

}  // namespace
}  // namespace tandem
