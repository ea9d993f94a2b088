// Worker.Embed over real gRPC (in process): the worker's embeddings equal the decoder's,
// pooling comes from the request or the worker's default, bad input gets the exact code
// naming the input, and a call past its deadline or before the model loads is refused.
#include <chrono>
#include <utility>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/decoder/embedding.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "workers/engine_test_util.h"
#include "workers/worker_server_test_util.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;

class WorkerEmbedRpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::TestServerOptions options;
    options.context_size = 64;
    ASSERT_OK(testing::StartTestWorkerServer(options, &worker_));
  }
  void TearDown() override {
    if (worker_.server != nullptr) worker_.server->Shutdown();
  }

  grpc::Status Call(const v1::EmbedTokensRequest& request, v1::EmbedTokensResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    return worker_.stub->Embed(&context, request, response);
  }

  std::vector<float> Expected(const std::vector<int32_t>& tokens, Pooling pooling) {
    ThreadPool pool(1);
    Decoder decoder(worker_.engine->model(), pool);
    absl::StatusOr<std::vector<float>> e =
        Embed(decoder, tokens, pooling, worker_.engine->options().kv_type);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? *e : std::vector<float>();
  }

  testing::TestWorkerServer worker_;
};

v1::EmbedTokensRequest Request(const std::vector<std::vector<int32_t>>& inputs,
                               v1::EmbedPooling pooling = v1::EMBED_POOLING_UNSPECIFIED) {
  v1::EmbedTokensRequest request;
  for (const std::vector<int32_t>& input : inputs) {
    request.add_inputs()->mutable_ids()->Add(input.begin(), input.end());
  }
  request.set_pooling(pooling);
  return request;
}

TEST_F(WorkerEmbedRpcTest, EmbedsEveryInputAsTheDecoderDoes) {
  const std::vector<std::vector<int32_t>> inputs = {testing::LongPrompt(1, 40),
                                                    testing::LongPrompt(2, 3)};
  struct Case {
    v1::EmbedPooling asked;
    v1::EmbedPooling ran;
    Pooling pooling;
  };
  for (const Case& c : {Case{v1::EMBED_POOLING_UNSPECIFIED, v1::EMBED_POOLING_MEAN, Pooling::kMean},
                        Case{v1::EMBED_POOLING_MEAN, v1::EMBED_POOLING_MEAN, Pooling::kMean},
                        Case{v1::EMBED_POOLING_LAST, v1::EMBED_POOLING_LAST, Pooling::kLast}}) {
    SCOPED_TRACE(v1::EmbedPooling_Name(c.asked));
    v1::EmbedTokensResponse response;
    const grpc::Status status = Call(Request(inputs, c.asked), &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.pooling(), c.ran);
    ASSERT_EQ(response.embeddings_size(), 2);
    for (int i = 0; i < 2; ++i) {
      const v1::Embedding& e = response.embeddings(i);
      EXPECT_EQ(e.index(), i);
      EXPECT_EQ(e.token_count(), static_cast<int32_t>(inputs[i].size()));
      EXPECT_EQ(std::vector<float>(e.values().begin(), e.values().end()),
                Expected(inputs[i], c.pooling));
    }
  }
}

TEST_F(WorkerEmbedRpcTest, RefusesBadInputsWithExactCodes) {
  struct Case {
    const char* name;
    v1::EmbedTokensRequest request;
    grpc::StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {"no inputs", Request({}), grpc::StatusCode::INVALID_ARGUMENT, "no inputs"},
      {"empty input", Request({{1}, {}}), grpc::StatusCode::INVALID_ARGUMENT, "input 1 is empty"},
      {"id outside", Request({{1, 100000}}), grpc::StatusCode::INVALID_ARGUMENT,
       "input 0 has token id 100000"},
      {"past the context", Request({{1}, testing::LongPrompt(1, 65)}),
       grpc::StatusCode::OUT_OF_RANGE, "input 1 has 65 tokens, more than the context of 64"},
      {"unknown pooling", Request({{1}}, static_cast<v1::EmbedPooling>(7)),
       grpc::StatusCode::INVALID_ARGUMENT, "unknown pooling 7"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    v1::EmbedTokensResponse response;
    const grpc::Status status = Call(c.request, &response);
    EXPECT_EQ(status.error_code(), c.code) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(c.message));
  }
}

TEST_F(WorkerEmbedRpcTest, IsRefusedPastItsDeadline) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() - std::chrono::seconds(1));
  v1::EmbedTokensResponse response;
  EXPECT_EQ(worker_.stub->Embed(&context, Request({{1, 2}}), &response).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
}

TEST(WorkerEmbedRpcPoolingTest, AWorkerStartedWithLastPoolsByTheLastPositionUnlessAsked) {
  testing::TestServerOptions options;
  options.pooling = Pooling::kLast;  // --pooling last
  testing::TestWorkerServer worker;
  ASSERT_OK(testing::StartTestWorkerServer(options, &worker));
  const std::vector<int32_t> input = testing::LongPrompt(5, 20);
  ThreadPool pool(1);
  Decoder decoder(worker.engine->model(), pool);
  for (auto [asked, pooling] : {std::pair{v1::EMBED_POOLING_UNSPECIFIED, Pooling::kLast},
                                std::pair{v1::EMBED_POOLING_MEAN, Pooling::kMean}}) {
    SCOPED_TRACE(v1::EmbedPooling_Name(asked));
    grpc::ClientContext context;
    v1::EmbedTokensResponse response;
    ASSERT_TRUE(worker.stub->Embed(&context, Request({input}, asked), &response).ok());
    EXPECT_EQ(response.pooling(),
              pooling == Pooling::kLast ? v1::EMBED_POOLING_LAST : v1::EMBED_POOLING_MEAN);
    absl::StatusOr<std::vector<float>> want =
        Embed(decoder, input, pooling, worker.engine->options().kv_type);
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_EQ(std::vector<float>(response.embeddings(0).values().begin(),
                                 response.embeddings(0).values().end()),
              *want);
  }
  worker.server->Shutdown();
}

TEST(WorkerEmbedRpcLoadingTest, IsUnavailableUntilTheModelIsLoaded) {
  testing::TestServerOptions options;
  options.set_engine = false;
  testing::TestWorkerServer worker;
  ASSERT_OK(testing::StartTestWorkerServer(options, &worker));
  grpc::ClientContext context;
  v1::EmbedTokensResponse response;
  EXPECT_EQ(worker.stub->Embed(&context, Request({{1}}), &response).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  worker.server->Shutdown();
}

}  // namespace
}  // namespace tandem
