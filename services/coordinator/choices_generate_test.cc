// Several choices per request (GenerateRequest.n, choices.h) through the coordinator over a
// real target worker served in process: seeded choices are reproducible, choice 0 is the
// reply of the same request with n = 1, the prompt is prefilled once (the other choices adopt
// its KV blocks and report them cached), usage counts the prompt once, and n is checked.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/coordinator/choices.h"
#include "services/coordinator/coordinator.h"
#include "services/coordinator/coordinator_stack_test_util.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kModel[] = "models/stories260K/stories260K.gguf";
// Long enough for whole 16-token KV blocks to share.
constexpr char kPrompt[] =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "park with her friends. One day, she saw a big red ball";

struct Choice {
  std::vector<int32_t> ids;
  std::string text;
  v1::GenerationResult final;
  int finals = 0;
};

struct Reply {
  std::map<int32_t, Choice> choices;
  std::vector<int32_t> order;  // choice_index of each message, as they came
};

class ChoicesGenerateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    target_ = std::make_unique<testing::TestWorker>(WorkerRole::kTarget, kModel);
    ASSERT_NE(target_->service, nullptr);
    target_->Serve();
    ASSERT_NE(target_->server, nullptr);
    std::vector<std::unique_ptr<WorkerClient>> targets;
    targets.push_back(target_->Client("target"));
    metrics_ = std::make_unique<CoordinatorMetrics>(registry_);
    CoordinatorOptions options;
    options.limits.max_choices = 4;
    absl::StatusOr<std::unique_ptr<Coordinator>> c =
        Coordinator::Create(options, std::move(targets), {}, metrics_.get());
    ASSERT_TRUE(c.ok()) << c.status();
    coordinator_ = std::move(*c);
  }

  absl::StatusOr<Reply> Generate(const v1::GenerateRequest& request) {
    Reply reply;
    const absl::Status status = coordinator_->Generate(
        request,
        [&](const v1::GenerateResponse& r) {
          Choice& choice = reply.choices[r.choice_index()];
          reply.order.push_back(r.choice_index());
          if (r.has_delta()) {
            choice.ids.insert(choice.ids.end(), r.delta().token_ids().begin(),
                              r.delta().token_ids().end());
            choice.text += r.delta().text();
          } else {
            choice.final = r.final();
            ++choice.finals;
          }
          return true;
        },
        [] { return false; });
    if (!status.ok()) return status;
    return reply;
  }

  static v1::GenerateRequest Request(int32_t n, float temperature) {
    v1::GenerateRequest request;
    request.set_text(kPrompt);
    request.set_n(n);
    request.mutable_sampling()->set_temperature(temperature);
    request.mutable_sampling()->set_seed(4242);
    request.set_max_tokens(24);
    request.set_ignore_eos(true);  // every choice runs its 24 tokens
    return request;
  }

  prometheus::Registry registry_;
  std::unique_ptr<testing::TestWorker> target_;
  std::unique_ptr<CoordinatorMetrics> metrics_;
  std::unique_ptr<Coordinator> coordinator_;
};

TEST_F(ChoicesGenerateTest, SeededChoicesShareThePrefillAndAreReproducible) {
  ASSERT_OK_AND_ASSIGN(Reply first, Generate(Request(3, 1.0f)));
  ASSERT_EQ(first.choices.size(), 3u);
  const int32_t prompt = first.choices[0].final.usage().prompt_tokens();
  ASSERT_GE(prompt, 33) << "the prompt must span whole KV blocks";
  int32_t adopted = 0;
  for (int32_t i = 0; i < 3; ++i) {
    const Choice& c = first.choices[i];
    EXPECT_EQ(c.finals, 1) << i;
    EXPECT_EQ(c.ids.size(), 24u) << i;
    EXPECT_EQ(c.final.seed(), ChoiceSeed(4242, i)) << i;
    EXPECT_EQ(c.final.usage().prompt_tokens(), prompt) << i;
    if (i == 0) {
      EXPECT_EQ(c.final.usage().cached_prompt_tokens(), 0);  // the one prefill
    } else {
      // The prompt's whole blocks came from choice 0's: only its last, partial block ran.
      EXPECT_GE(c.final.usage().cached_prompt_tokens(), prompt - 16) << i;
      adopted += c.final.usage().cached_prompt_tokens();
    }
  }
  // (cached_prompt_tokens is the target worker's own count of the positions its sync did not
  // run: SyncResult.reused_tokens, which counts the blocks adopted from other sessions.)
  EXPECT_GE(adopted, 2 * 32);
  // Sampled choices differ (24 tokens at temperature 1).
  EXPECT_NE(first.choices[0].ids, first.choices[1].ids);
  EXPECT_NE(first.choices[1].ids, first.choices[2].ids);
  // The last message carries the request's usage: the prompt once, every choice's tokens.
  ASSERT_FALSE(first.order.empty());
  const Choice& last = first.choices[first.order.back()];
  ASSERT_TRUE(last.final.has_request_usage());
  EXPECT_EQ(last.final.request_usage().prompt_tokens(), prompt);
  EXPECT_EQ(last.final.request_usage().cached_prompt_tokens(), 0);
  EXPECT_EQ(last.final.request_usage().generated_tokens(), 72);

  // The same request again: the same choices.
  ASSERT_OK_AND_ASSIGN(Reply again, Generate(Request(3, 1.0f)));
  for (int32_t i = 0; i < 3; ++i) EXPECT_EQ(again.choices[i].ids, first.choices[i].ids) << i;
  // With n = 1: choice 0's reply, on choice_index 0, with no request_usage.
  ASSERT_OK_AND_ASSIGN(Reply one, Generate(Request(1, 1.0f)));
  ASSERT_EQ(one.choices.size(), 1u);
  EXPECT_EQ(one.choices[0].ids, first.choices[0].ids);
  EXPECT_EQ(one.choices[0].text, first.choices[0].text);
  EXPECT_FALSE(one.choices[0].final.has_request_usage());
  EXPECT_EQ(target_->engine->active_sessions(), 0);
}

TEST_F(ChoicesGenerateTest, GreedyChoicesAreEqual) {
  ASSERT_OK_AND_ASSIGN(Reply reply, Generate(Request(2, 0.0f)));
  ASSERT_EQ(reply.choices.size(), 2u);
  EXPECT_EQ(reply.choices[0].ids, reply.choices[1].ids);
  EXPECT_EQ(reply.choices[0].ids.size(), 24u);
}

TEST_F(ChoicesGenerateTest, RefusesNOverTheLimitOrWithASession) {
  EXPECT_THAT(Generate(Request(5, 1.0f)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the limit is 4")));
  EXPECT_THAT(Generate(Request(-1, 1.0f)).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("n -1")));
  v1::GenerateRequest session = Request(2, 1.0f);
  session.set_session_id("chat-1");
  EXPECT_THAT(Generate(session).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("session_id")));
  EXPECT_EQ(target_->engine->active_sessions(), 0);
}

}  // namespace
}  // namespace tandem
