// The coordinator does not trust its draft: a draft worker whose guesses the target refuses
// (more than a verify takes, or a q that could not have drawn its guess) is dropped and the
// request goes on with the target alone, with the target alone's exact greedy text. Before,
// the target's INVALID_ARGUMENT failed the client's valid request.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
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

// What the hostile draft answers to every Draft.
struct BadGuesses {
  std::string name;
  int count;         // guesses per answer
  bool q_misses_it;  // each q puts its mass on another token than its guess
};

// A draft worker that describes the target's own model (so the coordinator accepts it) and
// answers Draft with `bad` guesses; Sync and Open succeed.
class HostileDraft final : public testing::FakeDraftWorker {
 public:
  HostileDraft(const WorkerEngine& model, BadGuesses bad)
      : FakeDraftWorker(model), bad_(std::move(bad)) {}

  grpc::Status Attach(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::SessionResponse, v1::SessionRequest>* stream) override {
    return testing::AnswerSession(
        stream, [this](const v1::SessionRequest& request, v1::SessionResponse* response) {
          if (!request.has_draft()) return;
          for (int i = 0; i < bad_.count; ++i) {
            v1::DraftToken* guess = response->mutable_draft()->add_guesses();
            guess->set_token_id(400);
            guess->mutable_distribution()->add_token_ids(bad_.q_misses_it ? 401 : 400);
            guess->mutable_distribution()->add_probabilities(1.0f);
          }
        });
  }

 private:
  const BadGuesses bad_;
};

TEST(HostileDraftTest, GuessesTheTargetRefusesDropTheDraftNotTheRequest) {
  testing::TestWorker target(WorkerRole::kTarget, "models/stories260K/stories260K.gguf");
  target.Serve();
  ASSERT_NE(target.server, nullptr);

  const std::vector<BadGuesses> cases = {
      {"65 guesses, more than a verify takes", 65, false},
      {"q gives the guess no probability", 2, true},
  };
  for (const BadGuesses& bad : cases) {
    for (bool pipelined : {false, true}) {
      SCOPED_TRACE(bad.name + (pipelined ? " pipelined" : ""));
      HostileDraft draft(*target.engine, bad);
      std::unique_ptr<grpc::Server> draft_server = testing::ServeInProcess(&draft);
      std::vector<std::unique_ptr<WorkerClient>> targets, drafts;
      targets.push_back(target.Client("target"));
      drafts.push_back(testing::InProcessClient("draft", *draft_server));
      prometheus::Registry coordinator_registry;
      CoordinatorMetrics metrics(coordinator_registry);
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<Coordinator> coordinator,
                           Coordinator::Create(CoordinatorOptions(), std::move(targets),
                                               std::move(drafts), &metrics));
      v1::GenerateRequest request;
      request.set_text("Once upon a time");
      request.mutable_sampling()->set_temperature(0);
      request.set_max_tokens(32);
      request.mutable_speculation()->set_pipelined(pipelined);
      std::string text;
      v1::GenerationResult final;
      const absl::Status status = coordinator->Generate(
          request,
          [&](const v1::GenerateResponse& r) {
            if (r.has_delta()) text += r.delta().text();
            if (r.has_final()) final = r.final();
            return true;
          },
          [] { return false; }, absl::Now() + absl::Seconds(60));
      ASSERT_TRUE(status.ok()) << status;
      EXPECT_EQ(text,
                ", there was a little girl named Lily. She loved to play outside in the park. One "
                "day, she saw");
      EXPECT_TRUE(final.speculation().draft_failed());
      EXPECT_EQ(final.usage().generated_tokens(), 32);
      coordinator.reset();
      draft_server->Shutdown();
    }
  }
  target.server->Shutdown();
}

}  // namespace
}  // namespace tandem
