// The coordinator tokenizes text and chat prompts itself with the target's tokenizer, sent once
// in Describe (local_tokenizer.h): over real gRPC on loopback, a request issues no Tokenize
// call to the target, and its prompt ids and output equal those of a coordinator that asks the
// target. A tokenizer that does not match the target's (tampered on the way, or a replica
// that tokenizes another way) is refused: every prompt goes to the target's Tokenize again.
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/coordinator/coordinator.h"
#include "services/coordinator/coordinator_stack_test_util.h"
#include "workers/worker_service.h"

namespace tandem {
namespace {

using Tamper = std::function<void(v1::DescribeResponse*)>;

// A real target worker behind a front that counts Tokenize calls and may alter Describe.
class CountingTarget final : public v1::Worker::Service {
 public:
  CountingTarget(WorkerService* real, Tamper tamper) : real_(real), tamper_(std::move(tamper)) {}
  grpc::Status Describe(grpc::ServerContext* context, const v1::DescribeRequest* request,
                        v1::DescribeResponse* response) override {
    grpc::Status status = real_->Describe(context, request, response);
    if (status.ok() && tamper_) tamper_(response);
    return status;
  }
  grpc::Status Tokenize(grpc::ServerContext* context, const v1::TokenizeRequest* request,
                        v1::TokenizeResponse* response) override {
    ++tokenize_calls;
    return real_->Tokenize(context, request, response);
  }
  grpc::Status Attach(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::SessionResponse, v1::SessionRequest>* stream) override {
    return real_->Attach(context, stream);
  }
  std::atomic<int> tokenize_calls{0};

 private:
  WorkerService* real_;
  Tamper tamper_;
};

constexpr char kStories[] = "models/stories260K/stories260K.gguf";

// A served stories260K target (behind a CountingTarget) reached over loopback TCP.
struct Target {
  explicit Target(Tamper tamper = nullptr) : worker(WorkerRole::kTarget, kStories, 8) {
    if (worker.service == nullptr) return;
    auto counting = std::make_unique<CountingTarget>(worker.service.get(), std::move(tamper));
    front = counting.get();
    worker.Serve(std::move(counting));
  }
  ~Target() {
    if (worker.server != nullptr) worker.server->Shutdown();
  }
  testing::TestWorker worker;
  CountingTarget* front = nullptr;
};

absl::StatusOr<std::unique_ptr<Coordinator>> Connect(const std::vector<const Target*>& targets,
                                                     bool local_tokenizer,
                                                     CoordinatorMetrics* metrics) {
  CoordinatorOptions options;
  options.local_tokenizer = local_tokenizer;
  std::vector<std::unique_ptr<WorkerClient>> clients;
  for (const Target* t : targets) clients.push_back(t->worker.TcpClient());
  return Coordinator::Create(options, std::move(clients), {}, metrics);
}

// The prompts: plain text, and a conversation (the model's template or its family format).
std::vector<v1::GenerateRequest> Prompts() {
  std::vector<v1::GenerateRequest> prompts(3);
  prompts[0].set_text("Once upon a time, there was a little girl named Lily.");
  prompts[1].set_text("  The cat <s> sat\n\non the mat.");
  v1::ChatConversation* chat = prompts[2].mutable_chat();
  for (const char* content : {"Tell me a story.", "About a dog, please."}) {
    v1::ChatMessage* m = chat->add_messages();
    m->set_role(chat->messages_size() == 0 ? "user" : "assistant");
    m->set_content(content);
  }
  chat->mutable_messages(1)->set_role("user");
  for (v1::GenerateRequest& r : prompts) {
    r.mutable_sampling()->set_temperature(0);
    r.set_max_tokens(12);
  }
  return prompts;
}

struct Reply {
  std::vector<int32_t> tokens;
  int32_t prompt_tokens = 0;
};

absl::StatusOr<Reply> Run(Coordinator& coordinator, const v1::GenerateRequest& request) {
  Reply reply;
  const absl::Status status = coordinator.Generate(
      request,
      [&](const v1::GenerateResponse& r) {
        if (r.has_delta()) {
          reply.tokens.insert(reply.tokens.end(), r.delta().token_ids().begin(),
                              r.delta().token_ids().end());
        }
        if (r.has_final()) reply.prompt_tokens = r.final().usage().prompt_tokens();
        return true;
      },
      [] { return false; }, absl::Now() + absl::Seconds(60));
  if (!status.ok()) return status;
  return reply;
}

v1::TokenizeRequest AsTokenize(const v1::GenerateRequest& r) {
  v1::TokenizeRequest t;
  if (r.has_chat()) {
    *t.mutable_chat() = r.chat();
  } else {
    t.set_text(r.text());
    t.set_add_special(true);
  }
  return t;
}

// Runs every prompt through `coordinator`; `expected` (if not empty) are the replies of a
// coordinator that asked the target, which these must equal.
void ExpectSameReplies(Coordinator& coordinator, const std::vector<Reply>& expected,
                       std::vector<Reply>* replies) {
  const std::vector<v1::GenerateRequest> prompts = Prompts();
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_OK_AND_ASSIGN(Reply reply, Run(coordinator, prompts[i]));
    EXPECT_GT(reply.prompt_tokens, 1) << "prompt " << i;
    EXPECT_FALSE(reply.tokens.empty()) << "prompt " << i;
    if (!expected.empty()) {
      EXPECT_EQ(reply.tokens, expected[i].tokens) << "prompt " << i;
      EXPECT_EQ(reply.prompt_tokens, expected[i].prompt_tokens) << "prompt " << i;
    }
    replies->push_back(std::move(reply));
  }
}

TEST(LocalTokenizerServiceTest, TextAndChatPromptsIssueNoTokenizeCallAndGiveTheTargetsOutput) {
  Target target;
  ASSERT_NE(target.worker.server, nullptr);
  prometheus::Registry registry;
  CoordinatorMetrics metrics(registry);
  // The reference: a coordinator that asks the target for every prompt's ids.
  std::vector<Reply> asked;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Coordinator> remote, Connect({&target}, false, &metrics));
    EXPECT_FALSE(remote->tokenizes_locally());
    ExpectSameReplies(*remote, {}, &asked);
    EXPECT_EQ(target.front->tokenize_calls, 3);
  }
  target.front->tokenize_calls = 0;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Coordinator> local, Connect({&target}, true, &metrics));
  EXPECT_TRUE(local->tokenizes_locally());
  std::vector<Reply> replies;
  ExpectSameReplies(*local, asked, &replies);
  // The public Tokenize answers locally too, with the worker's ids and rendered text.
  for (const v1::GenerateRequest& prompt : Prompts()) {
    const v1::TokenizeRequest request = AsTokenize(prompt);
    ASSERT_OK_AND_ASSIGN(v1::TokenizeResponse mine, local->Tokenize(request));
    grpc::ServerContext context;
    v1::TokenizeResponse workers;
    ASSERT_TRUE(target.worker.service->Tokenize(&context, &request, &workers).ok());
    EXPECT_THAT(mine.token_ids(), ::testing::ElementsAreArray(workers.token_ids()));
    EXPECT_EQ(mine.rendered_text(), workers.rendered_text());
  }
  EXPECT_EQ(target.front->tokenize_calls, 0);
}

// `tamper` spoils the target's Describe; the coordinator must then ask the target, and the
// replies must be the reference ones.
void ExpectFallback(const Tamper& tamper, bool second_replica) {
  Target target(second_replica ? nullptr : tamper);
  ASSERT_NE(target.worker.server, nullptr);
  prometheus::Registry registry;
  CoordinatorMetrics metrics(registry);
  std::vector<Reply> asked;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Coordinator> remote, Connect({&target}, false, &metrics));
    ExpectSameReplies(*remote, {}, &asked);
  }
  std::unique_ptr<Target> other;
  std::vector<const Target*> targets = {&target};
  if (second_replica) {
    other = std::make_unique<Target>(tamper);
    ASSERT_NE(other->worker.server, nullptr);
    targets.push_back(other.get());
  }
  target.front->tokenize_calls = 0;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Coordinator> local, Connect(targets, true, &metrics));
  EXPECT_FALSE(local->tokenizes_locally());
  std::vector<Reply> replies;
  ExpectSameReplies(*local, asked, &replies);
  const int calls =
      target.front->tokenize_calls + (other ? other->front->tokenize_calls.load() : 0);
  EXPECT_EQ(calls, 3) << "each prompt is tokenized by a target";
}

TEST(LocalTokenizerServiceTest, ATokenizerThatDoesNotMatchItsFingerprintFallsBackToTheTarget) {
  // A score changed on the way: what arrived is not what the worker tokenizes with.
  ExpectFallback(
      [](v1::DescribeResponse* d) {
        if (d->has_tokenizer()) d->mutable_tokenizer()->set_scores(300, -0.5f);
      },
      false);
}

TEST(LocalTokenizerServiceTest, ATargetThatSendsNoTokenizerIsAskedForEveryPrompt) {
  ExpectFallback(
      [](v1::DescribeResponse* d) {
        d->clear_tokenizer();  // a worker that predates include_tokenizer
        d->mutable_model()->clear_tokenizer_fingerprint();
      },
      false);
}

TEST(LocalTokenizerServiceTest, AReplicaThatTokenizesAnotherWayFallsBackToTheTargets) {
  // Same vocabulary (ids to texts), another tokenizer: its probes report another fingerprint.
  ExpectFallback(
      [](v1::DescribeResponse* d) { d->mutable_model()->set_tokenizer_fingerprint("0123abcd"); },
      true);
}

}  // namespace
}  // namespace tandem
