// Coordinator::Embed over a real target worker on loopback gRPC: text inputs are tokenized as
// text prompts are, the vectors are the target's (the same bits alone or in a batch, mean or
// last), and bad requests get exact codes naming the input before any worker call.
#include <memory>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/coordinator/coordinator.h"
#include "services/coordinator/coordinator_stack_test_util.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kStories[] = "models/stories260K/stories260K.gguf";

class CoordinatorEmbedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    target_ = std::make_unique<testing::TestWorker>(WorkerRole::kTarget, kStories, 4);
    target_->Serve();
    ASSERT_NE(target_->server, nullptr);
    metrics_ = std::make_unique<CoordinatorMetrics>(registry_);
    std::vector<std::unique_ptr<WorkerClient>> targets;
    targets.push_back(target_->TcpClient());
    CoordinatorOptions options;
    options.limits.max_embed_inputs = 4;
    options.limits.max_embed_tokens = 300;
    absl::StatusOr<std::unique_ptr<Coordinator>> c =
        Coordinator::Create(options, std::move(targets), {}, metrics_.get());
    ASSERT_TRUE(c.ok()) << c.status();
    coordinator_ = std::move(*c);
  }
  void TearDown() override {
    coordinator_.reset();
    if (target_ != nullptr && target_->server != nullptr) target_->server->Shutdown();
  }

  static std::vector<float> Values(const v1::Embedding& e) {
    return std::vector<float>(e.values().begin(), e.values().end());
  }

  prometheus::Registry registry_;
  std::unique_ptr<testing::TestWorker> target_;
  std::unique_ptr<CoordinatorMetrics> metrics_;
  std::unique_ptr<Coordinator> coordinator_;
};

v1::EmbedRequest Texts(const std::vector<std::string>& texts,
                       v1::EmbedPooling pooling = v1::EMBED_POOLING_UNSPECIFIED) {
  v1::EmbedRequest request;
  for (const std::string& t : texts) request.add_inputs()->set_text(t);
  request.set_pooling(pooling);
  return request;
}

TEST_F(CoordinatorEmbedTest, TextIsTokenizedAsAPromptAndEmbeddedAsItsIds) {
  v1::TokenizeRequest tokenize;
  tokenize.set_text("Once upon a time");
  tokenize.set_add_special(true);
  ASSERT_OK_AND_ASSIGN(v1::TokenizeResponse ids, coordinator_->Tokenize(tokenize));
  v1::EmbedRequest by_ids;
  *by_ids.add_inputs()->mutable_token_ids()->mutable_ids() = ids.token_ids();
  ASSERT_OK_AND_ASSIGN(v1::EmbedResponse from_text, coordinator_->Embed(Texts({"Once upon a time"})));
  ASSERT_OK_AND_ASSIGN(v1::EmbedResponse from_ids, coordinator_->Embed(by_ids));
  ASSERT_EQ(from_text.embeddings_size(), 1);
  EXPECT_EQ(Values(from_text.embeddings(0)), Values(from_ids.embeddings(0)));
  EXPECT_EQ(from_text.prompt_tokens(), ids.token_ids_size());
  EXPECT_EQ(from_text.embeddings(0).token_count(), ids.token_ids_size());
  EXPECT_EQ(from_text.model(), coordinator_->Describe().target().name());
  EXPECT_EQ(from_text.pooling(), v1::EMBED_POOLING_MEAN);
}

TEST_F(CoordinatorEmbedTest, AnInputIsTheSameBitsAloneOrInABatch) {
  for (v1::EmbedPooling pooling : {v1::EMBED_POOLING_MEAN, v1::EMBED_POOLING_LAST}) {
    SCOPED_TRACE(v1::EmbedPooling_Name(pooling));
    ASSERT_OK_AND_ASSIGN(v1::EmbedResponse batch,
                         coordinator_->Embed(Texts({"Lily had a cat.", "The sun", "Tom ran."},
                                                   pooling)));
    ASSERT_EQ(batch.embeddings_size(), 3);
    EXPECT_EQ(batch.pooling(), pooling);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(batch.embeddings(i).index(), i);
      const std::string text = i == 0 ? "Lily had a cat." : i == 1 ? "The sun" : "Tom ran.";
      ASSERT_OK_AND_ASSIGN(v1::EmbedResponse alone, coordinator_->Embed(Texts({text}, pooling)));
      EXPECT_EQ(Values(alone.embeddings(0)), Values(batch.embeddings(i))) << text;
    }
    EXPECT_NE(Values(batch.embeddings(0)), Values(batch.embeddings(1)));
  }
}

TEST_F(CoordinatorEmbedTest, RefusesBadRequestsWithExactCodes) {
  v1::EmbedRequest bad_id;
  bad_id.add_inputs()->set_text("fine");
  bad_id.add_inputs()->mutable_token_ids()->add_ids(1 << 20);
  v1::EmbedRequest empty_ids;
  empty_ids.add_inputs()->mutable_token_ids();
  v1::EmbedRequest unset;
  unset.add_inputs();
  v1::EmbedRequest long_input;
  for (int i = 0; i < 257; ++i) long_input.add_inputs()->mutable_token_ids()->add_ids(1);
  long_input.mutable_inputs()->DeleteSubrange(1, 256);
  for (int i = 0; i < 256; ++i) long_input.mutable_inputs(0)->mutable_token_ids()->add_ids(1);
  v1::EmbedRequest bad_pooling = Texts({"a"});
  bad_pooling.set_pooling(static_cast<v1::EmbedPooling>(9));
  struct Case {
    const char* name;
    v1::EmbedRequest request;
    absl::StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {"no inputs", v1::EmbedRequest(), absl::StatusCode::kInvalidArgument, "none given"},
      {"five inputs", Texts({"a", "b", "c", "d", "e"}), absl::StatusCode::kInvalidArgument,
       "inputs is 5 inputs; the limit is 4"},
      {"empty text", Texts({"a", ""}), absl::StatusCode::kInvalidArgument,
       "inputs[1]: the text is empty"},
      {"id outside", bad_id, absl::StatusCode::kInvalidArgument,
       "inputs[1]: token id 1048576 is outside the vocabulary"},
      {"no ids", empty_ids, absl::StatusCode::kInvalidArgument, "inputs[0] has no token ids"},
      {"neither", unset, absl::StatusCode::kInvalidArgument, "inputs[0] has neither"},
      {"longer than the context", long_input, absl::StatusCode::kOutOfRange,
       "inputs[0] is 257 tokens, longer than the context of 256"},
      {"unknown pooling", bad_pooling, absl::StatusCode::kInvalidArgument, "pooling"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(coordinator_->Embed(c.request), StatusIs(c.code, HasSubstr(c.message)));
  }
}

TEST_F(CoordinatorEmbedTest, RefusesMoreTokensInAllThanTheLimit) {
  v1::EmbedRequest request;
  for (int i = 0; i < 2; ++i) {
    v1::TokenIds* ids = request.add_inputs()->mutable_token_ids();
    for (int j = 0; j < 200; ++j) ids->add_ids(1);
  }
  EXPECT_THAT(coordinator_->Embed(request),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("inputs[1] brings the token ids to 400; the limit is 300")));
}

TEST_F(CoordinatorEmbedTest, IsDeadlineExceededPastItsDeadline) {
  EXPECT_THAT(coordinator_->Embed(Texts({"a"}), absl::Now() - absl::Seconds(1)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
}

}  // namespace
}  // namespace tandem
