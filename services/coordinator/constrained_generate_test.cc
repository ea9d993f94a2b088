// Constrained requests (GenerateRequest.constraint) through a coordinator over real workers
// served in process: the output matches the grammar and, greedy, equals the constrained target
// alone whatever drafts; forced tokens are free guesses and kept; a bad constraint is refused before any
// worker call; a follow-up on the session without one is unconstrained; a target stream that
// is replaced gets the constraint again.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_matchers.h"
#include "core/generation/session.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/coordinator/coordinator.h"
#include "services/coordinator/coordinator_stack_test_util.h"
#include "wire/constraint_compiler.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kSentence[] = R"(root ::= name " was " mood "."
name ::= "Tim" | "Lily" | "Sue"
mood ::= "happy" | "sad" | "very " ("happy" | "sad"))";

constexpr char kStories[] = "models/stories260K/stories260K.gguf";
constexpr char kDraft[] = "models/stories260K/derived/stories-draft-distilled.gguf";

// The text is one of the grammar's sentences.
bool IsSentence(const std::string& text) {
  for (const char* name : {"Tim", "Lily", "Sue"}) {
    const std::string head = absl::StrCat(name, " was ");
    if (text.rfind(head, 0) != 0) continue;
    std::string rest = text.substr(head.size());
    if (rest.rfind("very ", 0) == 0) rest = rest.substr(5);
    if (rest == "happy." || rest == "sad.") return true;
  }
  return false;
}

struct Reply {
  std::vector<int32_t> ids;
  std::string text;
  v1::GenerationResult final;
};

// A stories260K target (and optionally a draft) and a coordinator over them.
class ConstrainedGenerateTest : public ::testing::Test {
 protected:
  void Start(bool draft, absl::Duration idle_timeout = absl::Minutes(10)) {
    target_ = std::make_unique<testing::TestWorker>(WorkerRole::kTarget, kStories, 0, idle_timeout);
    target_->Serve();
    ASSERT_NE(target_->server, nullptr);
    std::vector<std::unique_ptr<WorkerClient>> targets, drafts;
    // A target whose streams close while idle needs a channel that can reconnect.
    targets.push_back(idle_timeout < absl::Minutes(10) ? target_->TcpClient()
                                                       : target_->Client("target"));
    if (draft) {
      draft_ = std::make_unique<testing::TestWorker>(WorkerRole::kDraft, kDraft);
      draft_->Serve();
      ASSERT_NE(draft_->server, nullptr);
      drafts.push_back(draft_->Client("draft"));
    }
    metrics_ = std::make_unique<CoordinatorMetrics>(registry_);
    absl::StatusOr<std::unique_ptr<Coordinator>> c = Coordinator::Create(
        CoordinatorOptions(), std::move(targets), std::move(drafts), metrics_.get());
    ASSERT_OK(c.status());
    coordinator_ = std::move(*c);
  }

  absl::StatusOr<Reply> Generate(const v1::GenerateRequest& request) {
    Reply reply;
    const absl::Status status = coordinator_->Generate(
        request,
        [&](const v1::GenerateResponse& r) {
          if (r.has_delta()) {
            reply.ids.insert(reply.ids.end(), r.delta().token_ids().begin(),
                             r.delta().token_ids().end());
            reply.text += r.delta().text();
          } else {
            reply.final = r.final();
          }
          return true;
        },
        [] { return false; }, absl::Now() + absl::Seconds(60));
    if (!status.ok()) return status;
    return reply;
  }

  static v1::GenerateRequest Request(float temperature, const char* grammar = kSentence) {
    v1::GenerateRequest request;
    request.set_text("Once upon a time");
    request.mutable_sampling()->set_temperature(temperature);
    request.mutable_sampling()->set_seed(5);
    request.set_max_tokens(48);
    if (grammar != nullptr) request.mutable_constraint()->set_grammar(grammar);
    return request;
  }

  // The constrained target alone, in process: greedy, the reference output.
  std::vector<int32_t> TargetAlone() {
    ThreadPool pool(1);
    SessionOptions options;
    options.sampler.temperature = 0;
    options.context_size = 256;
    options.stop_ids = {2};
    absl::StatusOr<std::unique_ptr<Session>> session =
        Session::Create(target_->engine->model(), pool, options);
    EXPECT_OK(session.status());
    ConstraintCompiler compiler(ConstraintCompiler::TokenBytes(target_->engine->tokenizer()));
    absl::StatusOr<std::unique_ptr<TokenConstraint>> constraint =
        compiler.New({ConstraintSpec::Kind::kGrammar, kSentence}, {2});
    EXPECT_OK(constraint.status());
    std::vector<int32_t> ids;
    if (!session.ok() || !constraint.ok()) return ids;
    EXPECT_OK((*session)
                  ->Generate(
                      {1, 403, 407, 261, 378}, 48,
                      [&](int32_t t) {
                        ids.push_back(t);
                        return true;
                      },
                      constraint->get())
                  .status());
    return ids;
  }

  prometheus::Registry registry_;
  std::unique_ptr<testing::TestWorker> target_, draft_;
  std::unique_ptr<CoordinatorMetrics> metrics_;
  std::unique_ptr<Coordinator> coordinator_;
};

TEST_F(ConstrainedGenerateTest, GreedyOutputIsTheConstrainedTargetAlonesWhateverDrafts) {
  Start(/*draft=*/true);
  const std::vector<int32_t> alone = TargetAlone();
  ASSERT_FALSE(alone.empty());
  for (v1::SpeculationMethod method :
       {v1::SPECULATION_METHOD_DRAFT_MODEL, v1::SPECULATION_METHOD_NGRAM}) {
    for (bool speculate : {true, false}) {
      v1::GenerateRequest request = Request(0.0f);
      request.mutable_speculation()->set_enabled(speculate);
      request.mutable_speculation()->set_method(method);
      ASSERT_OK_AND_ASSIGN(Reply reply, Generate(request));
      SCOPED_TRACE(absl::StrCat("method ", method, " speculate ", speculate, ": ", reply.text));
      EXPECT_EQ(reply.ids, alone);
      EXPECT_TRUE(IsSentence(reply.text));
      EXPECT_EQ(reply.final.finish_reason(), v1::FINISH_REASON_STOP_TOKEN);
      // Forced tokens (the period after the mood, when a round starts there) are kept.
      EXPECT_EQ(reply.final.speculation().forced_accepted_tokens(),
                reply.final.speculation().forced_tokens());
    }
  }
  EXPECT_EQ(metrics_->ConstrainedRequests("grammar").Value(), 4);
  EXPECT_GT(metrics_->forced_tokens.Value(), 0);  // some round started where one was forced
}

TEST_F(ConstrainedGenerateTest, SampledOutputMatchesTheGrammarForEverySeed) {
  Start(/*draft=*/true);
  for (uint64_t seed : {1, 2, 3, 4, 5, 6}) {
    v1::GenerateRequest request = Request(1.0f);
    request.mutable_sampling()->set_seed(seed);
    request.mutable_speculation()->set_coupling(seed % 2 ? v1::COUPLING_GUMBEL
                                                         : v1::COUPLING_STANDARD);
    ASSERT_OK_AND_ASSIGN(Reply reply, Generate(request));
    if (reply.final.finish_reason() == v1::FINISH_REASON_STOP_TOKEN) {
      EXPECT_TRUE(IsSentence(reply.text)) << "seed " << seed << ": " << reply.text;
    }
  }
}

TEST_F(ConstrainedGenerateTest, ABadGrammarIsInvalidArgumentBeforeAnyWorkerCall) {
  Start(/*draft=*/true);
  v1::GenerateRequest request = Request(0.0f, "root ::= \"a\" missing");
  request.set_session_id("bad");
  EXPECT_THAT(Generate(request),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'missing'")));
  EXPECT_EQ(target_->engine->active_sessions(), 0);  // no session was opened anywhere
  EXPECT_EQ(draft_->engine->active_sessions(), 0);
  EXPECT_THAT(coordinator_->CloseSession("bad"), StatusIs(absl::StatusCode::kNotFound));
  ASSERT_OK_AND_ASSIGN(Reply fine, Generate(Request(0.0f)));  // the coordinator still serves
  EXPECT_TRUE(IsSentence(fine.text)) << fine.text;
}

TEST_F(ConstrainedGenerateTest, AFollowUpWithoutAConstraintIsUnconstrained) {
  Start(/*draft=*/true);
  ASSERT_OK_AND_ASSIGN(Reply free, Generate(Request(0.0f, nullptr)));
  v1::GenerateRequest constrained = Request(0.0f);
  constrained.set_session_id("s");
  ASSERT_OK_AND_ASSIGN(Reply first, Generate(constrained));
  EXPECT_TRUE(IsSentence(first.text)) << first.text;
  // Same session, same prompt, no constraint: the workers must have let go of it.
  v1::GenerateRequest follow_up = Request(0.0f, nullptr);
  follow_up.set_session_id("s");
  ASSERT_OK_AND_ASSIGN(Reply second, Generate(follow_up));
  EXPECT_EQ(second.ids, free.ids);
  // And constrained again: a fresh constraint from the new prompt's end.
  ASSERT_OK_AND_ASSIGN(Reply third, Generate(constrained));
  EXPECT_EQ(third.ids, first.ids);
  EXPECT_OK(coordinator_->CloseSession("s"));
}

TEST_F(ConstrainedGenerateTest, ATargetStreamThatClosedGetsTheConstraintAgain) {
  Start(/*draft=*/false, absl::Milliseconds(400));  // the target closes streams idle for 0.4 s
  v1::GenerateRequest request = Request(0.0f);
  request.set_session_id("s");
  ASSERT_OK_AND_ASSIGN(Reply first, Generate(request));
  EXPECT_TRUE(IsSentence(first.text)) << first.text;
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  // The session's target stream is gone: the request re-attaches, re-fills and re-constrains.
  ASSERT_OK_AND_ASSIGN(Reply again, Generate(request));
  EXPECT_EQ(again.ids, first.ids);
  EXPECT_OK(coordinator_->CloseSession("s"));
}

}  // namespace
}  // namespace tandem
