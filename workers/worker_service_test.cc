// tandem.v1.Worker over real gRPC, in process (ServerBuilder + InProcessChannel).
#include "workers/worker_service.h"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "grpcpp/server.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "wire/constraint_compiler.h"
#include "workers/worker_server_test_util.h"

namespace tandem {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class WorkerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::TestServerOptions options;
    options.context_size = 64;
    options.max_sessions = 2;
    options.set_engine = false;  // each test loads the model itself
    ASSERT_OK(testing::StartTestWorkerServer(options, &worker_));
  }
  void TearDown() override {
    if (worker_.server != nullptr) worker_.server->Shutdown();
  }

  using Stream = testing::SessionStream;
  v1::SessionResponse Call(Stream& stream, const v1::SessionRequest& request) {
    return testing::Exchange(stream, request);
  }

  testing::TestWorkerServer worker_;
};

TEST_F(WorkerServiceTest, IsUnavailableUntilTheModelIsLoaded) {
  grpc::ClientContext context;
  v1::DescribeResponse response;
  EXPECT_EQ(worker_.stub->Describe(&context, v1::DescribeRequest(), &response).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(WorkerServiceTest, DescribesTheModelAndItsVocabulary) {
  worker_.service->SetEngine(worker_.engine.get());
  grpc::ClientContext context;
  v1::DescribeRequest request;
  request.set_include_vocabulary(true);
  v1::DescribeResponse response;
  ASSERT_TRUE(worker_.stub->Describe(&context, request, &response).ok());
  const v1::ModelInfo& model = response.model();
  EXPECT_EQ(model.architecture(), "llama");
  EXPECT_EQ(model.vocab_size(), 512);
  EXPECT_EQ(model.context_size(), 64);
  EXPECT_EQ(model.activations(), "int16");  // #31: the default
  EXPECT_EQ(model.vocabulary_fingerprint().size(), 16u);
  EXPECT_EQ(model.special_tokens().bos_id(), 1);
  EXPECT_EQ(model.special_tokens().eos_id(), 2);
  EXPECT_THAT(model.special_tokens().end_of_turn_ids(), ElementsAre(2));
  EXPECT_TRUE(model.special_tokens().add_bos());
  EXPECT_EQ(response.role(), v1::WORKER_ROLE_TARGET);
  EXPECT_FALSE(response.has_kv_capacity());  // no KV budget: nothing for admission to count
  ASSERT_EQ(response.vocabulary().token_bytes_size(), 512);
  EXPECT_EQ(response.vocabulary().token_bytes(3 + 'A'), "A");  // byte token <0x41>
  EXPECT_EQ(response.vocabulary().token_bytes(1), "");         // BOS decodes to nothing
  // Without the tokenizer, control tokens are never allowed; with it (as the coordinator asks),
  // the coordinator compiles constraints over the same bytes a worker compiles over.
  std::vector<std::string> without = ConstraintCompiler::TokenBytes(response);
  EXPECT_EQ(without[1], "");
  grpc::ClientContext again;
  request.set_include_tokenizer(true);
  ASSERT_TRUE(worker_.stub->Describe(&again, request, &response).ok());
  EXPECT_EQ(ConstraintCompiler::TokenBytes(response),
            ConstraintCompiler::TokenBytes(worker_.engine->tokenizer()));
  EXPECT_EQ(ConstraintCompiler::TokenBytes(response)[1], "\xFF<s>\xFF");
}

TEST_F(WorkerServiceTest, DescribeCarriesTheWholeTokenizerOnlyWhenAsked) {
  worker_.service->SetEngine(worker_.engine.get());
  grpc::ClientContext probe_context;
  v1::DescribeResponse probe;
  ASSERT_TRUE(worker_.stub->Describe(&probe_context, v1::DescribeRequest(), &probe).ok());
  EXPECT_FALSE(probe.has_tokenizer());  // health probes stay small
  EXPECT_EQ(probe.model().tokenizer_fingerprint(), worker_.engine->tokenizer_fingerprint());
  EXPECT_EQ(probe.model().tokenizer_fingerprint().size(), 16u);

  grpc::ClientContext context;
  v1::DescribeRequest request;
  request.set_include_tokenizer(true);
  v1::DescribeResponse response;
  ASSERT_TRUE(worker_.stub->Describe(&context, request, &response).ok());
  const v1::TokenizerData& data = response.tokenizer();
  EXPECT_EQ(data.encoding(), v1::TEXT_ENCODING_METASPACE);
  EXPECT_EQ(data.merge_model(), v1::MERGE_MODEL_SCORES);
  EXPECT_EQ(data.tokens_size(), 512);
  EXPECT_EQ(data.scores_size(), 512);
  EXPECT_EQ(data.bos_id(), 1);
  EXPECT_TRUE(data.add_bos());
  EXPECT_FALSE(data.has_chat_template());  // stories260K has none
  EXPECT_EQ(response.model().tokenizer_fingerprint(), probe.model().tokenizer_fingerprint());
}

TEST_F(WorkerServiceTest, TokenizesTextAndChats) {
  worker_.service->SetEngine(worker_.engine.get());
  grpc::ClientContext context;
  v1::TokenizeRequest request;
  request.set_text("Once upon a time");
  request.set_add_special(true);
  v1::TokenizeResponse response;
  ASSERT_TRUE(worker_.stub->Tokenize(&context, request, &response).ok());
  EXPECT_THAT(response.token_ids(), ElementsAre(1, 403, 407, 261, 378));

  grpc::ClientContext chat_context;
  v1::TokenizeRequest chat;
  auto* message = chat.mutable_chat()->add_messages();
  message->set_role("user");
  message->set_content("Once upon a time");
  ASSERT_TRUE(worker_.stub->Tokenize(&chat_context, chat, &response).ok());
  // No template in the model: raw, so the same ids.
  EXPECT_THAT(response.token_ids(), ElementsAre(1, 403, 407, 261, 378));
  EXPECT_EQ(response.rendered_text(), "Once upon a time");
}

TEST_F(WorkerServiceTest, AttachRunsSyncVerifyAndKeepsTheSessionAfterABadRequest) {
  worker_.service->SetEngine(worker_.engine.get());
  grpc::ClientContext context;
  auto stream = worker_.stub->Attach(&context);
  v1::SessionRequest request;
  request.set_request_id(1);
  request.mutable_open()->set_session_id("s");
  EXPECT_TRUE(Call(*stream, request).has_opened());
  EXPECT_EQ(worker_.engine->active_sessions(), 1);

  request.set_request_id(2);
  request.mutable_sync()->set_position(0);
  request.mutable_sync()->add_tokens(1);
  request.mutable_sync()->add_tokens(403);
  v1::SessionResponse response = Call(*stream, request);
  EXPECT_EQ(response.sync().cached_tokens(), 2);

  request.set_request_id(3);
  request.mutable_sync()->set_position(9);  // past the cache: an error, not a dead stream
  response = Call(*stream, request);
  ASSERT_TRUE(response.has_error());
  EXPECT_EQ(response.error().code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(response.error().message(), HasSubstr("position 9"));

  request.set_request_id(4);
  v1::VerifyRequest* verify = request.mutable_verify();
  verify->set_position(2);
  verify->add_tokens(407);
  verify->add_tokens(261);
  verify->set_pending_token(378);
  verify->mutable_sampling()->set_temperature(0);
  v1::DraftToken* guess = verify->add_guesses();  // the right guess (golden), q one-hot
  guess->set_token_id(432);
  guess->mutable_distribution()->add_token_ids(432);
  guess->mutable_distribution()->add_probabilities(1.0f);
  response = Call(*stream, request);
  ASSERT_TRUE(response.has_verify()) << response.error().message();
  EXPECT_EQ(response.verify().accepted_count(), 1);
  EXPECT_EQ(response.verify().next_token(), 383);  // golden's second token, the bonus
  EXPECT_GT(response.compute_seconds(), 0.0);

  request.set_request_id(5);
  request.mutable_close();
  EXPECT_TRUE(Call(*stream, request).has_closed());
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  EXPECT_EQ(worker_.engine->active_sessions(), 0);
}

// A constrain request, then greedy verifies without guesses: each next token is the grammar's.
TEST_F(WorkerServiceTest, ConstrainSetsTheSessionsConstraintAndABadOneIsARequestError) {
  worker_.service->SetEngine(worker_.engine.get());
  grpc::ClientContext context;
  auto stream = worker_.stub->Attach(&context);
  v1::SessionRequest request;
  request.set_request_id(1);
  request.mutable_open();
  ASSERT_TRUE(Call(*stream, request).has_opened());

  request.set_request_id(2);
  v1::ConstrainRequest* constrain = request.mutable_constrain();
  constrain->mutable_constraint()->set_grammar("root ::= \"x\" undefined");
  constrain->set_start_position(5);
  constrain->add_end_ids(2);
  v1::SessionResponse response = Call(*stream, request);
  ASSERT_TRUE(response.has_error());
  EXPECT_EQ(response.error().code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(response.error().message(), HasSubstr("undefined"));

  request.set_request_id(3);
  constrain->mutable_constraint()->set_grammar("root ::= [0-9]+ \"!\"");
  response = Call(*stream, request);
  ASSERT_TRUE(response.has_constrained()) << response.error().message();

  // "Once upon a time" then digits: the prompt's 5 tokens are not constrained, the output is.
  std::vector<int32_t> sequence = {1, 403, 407, 261, 378};
  for (int i = 0; i < 3; ++i) {
    request.set_request_id(4 + i);
    v1::VerifyRequest* verify = request.mutable_verify();
    verify->set_position(0);
    verify->mutable_tokens()->Assign(sequence.begin(), sequence.end() - 1);
    verify->set_pending_token(sequence.back());
    verify->mutable_sampling()->set_temperature(0);
    response = Call(*stream, request);
    ASSERT_TRUE(response.has_verify()) << response.error().message();
    const int32_t next = response.verify().next_token();
    ASSERT_OK_AND_ASSIGN(absl::string_view bytes, worker_.engine->tokenizer().TokenBytes(next));
    ASSERT_FALSE(bytes.empty());
    for (char c : bytes) EXPECT_TRUE(c >= '0' && c <= '9') << "token " << next << ": " << bytes;
    sequence.push_back(next);
  }

  request.set_request_id(7);
  request.mutable_constrain()->Clear();  // no constraint: cleared
  EXPECT_TRUE(Call(*stream, request).has_constrained());
  request.set_request_id(8);
  request.mutable_constrain()->set_start_position(-3);
  response = Call(*stream, request);
  EXPECT_EQ(response.error().code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(response.error().message(), "start_position -3 < 0");
}

TEST_F(WorkerServiceTest, FirstRequestMustOpenAndAFullWorkerEvictsItsLeastRecentlyUsedStream) {
  worker_.service->SetEngine(worker_.engine.get());
  {
    grpc::ClientContext context;
    auto stream = worker_.stub->Attach(&context);
    v1::SessionRequest request;
    request.mutable_sync()->add_tokens(1);
    stream->Write(request);
    stream->WritesDone();
    v1::SessionResponse response;
    EXPECT_FALSE(stream->Read(&response));
    EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  grpc::ClientContext c1, c2, c3;
  auto s1 = worker_.stub->Attach(&c1), s2 = worker_.stub->Attach(&c2),
       s3 = worker_.stub->Attach(&c3);
  v1::SessionRequest open;
  open.mutable_open();
  EXPECT_TRUE(Call(*s1, open).has_opened());
  EXPECT_TRUE(Call(*s2, open).has_opened());
  v1::SessionRequest sync;
  sync.set_request_id(1);
  sync.mutable_sync()->add_tokens(1);
  EXPECT_EQ(Call(*s1, sync).sync().cached_tokens(), 1);  // s2 is now the older one
  // The worker is full (2 sessions, both idle): a third evicts s2 and cancels its stream.
  EXPECT_TRUE(Call(*s3, open).has_opened());
  EXPECT_EQ(worker_.engine->active_sessions(), 2);
  v1::SessionResponse response;
  EXPECT_FALSE(s2->Read(&response));
  EXPECT_EQ(s2->Finish().error_code(), grpc::StatusCode::CANCELLED);
  sync.set_request_id(2);
  sync.mutable_sync()->set_position(1);
  EXPECT_EQ(Call(*s1, sync).sync().cached_tokens(), 2);  // s1 kept its cache
  // Cancelling a stream frees its session.
  c1.TryCancel();
  for (int i = 0; i < 200 && worker_.engine->active_sessions() != 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(worker_.engine->active_sessions(), 1);
  s3->WritesDone();
  EXPECT_TRUE(s3->Finish().ok());
  EXPECT_EQ(worker_.engine->active_sessions(), 0);
}

// The "state" labels of tandem_worker_kv_blocks in the registry, with their values.
std::map<std::string, double> KvBlockGauges(prometheus::Registry& registry) {
  std::map<std::string, double> states;
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != "tandem_worker_kv_blocks") continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      for (const prometheus::ClientMetric::Label& label : metric.label) {
        if (label.name == "state") states[label.value] = metric.gauge.value;
      }
    }
  }
  return states;
}

// Without a KV budget the pool is unbounded: no "free" series, never -1.
TEST_F(WorkerServiceTest, KvBlockGaugesHaveNoFreeSeriesWithoutABudget) {
  worker_.service->SetEngine(worker_.engine.get());
  grpc::ClientContext context;
  auto stream = worker_.stub->Attach(&context);
  v1::SessionRequest request;
  request.set_request_id(1);
  request.mutable_open()->set_session_id("s");
  ASSERT_TRUE(Call(*stream, request).has_opened());
  request.set_request_id(2);
  request.mutable_sync()->set_position(0);
  request.mutable_sync()->add_tokens(1);
  request.mutable_sync()->add_tokens(403);
  ASSERT_EQ(Call(*stream, request).sync().cached_tokens(), 2);
  const std::map<std::string, double> states = KvBlockGauges(worker_.registry);
  EXPECT_EQ(states.count("free"), 0u);
  ASSERT_EQ(states.count("used"), 1u);
  EXPECT_GE(states.at("used"), 1);
  for (const auto& [state, value] : states) EXPECT_GE(value, 0) << state;
}

TEST(WorkerServiceOpenTest, AttachStreamsThatNeverSendOpenAreClosedAfterTheOpenTimeout) {
  testing::TestServerOptions options;
  options.context_size = 32;
  options.open_timeout = absl::Milliseconds(300);
  testing::TestWorkerServer worker;
  ASSERT_OK(testing::StartTestWorkerServer(options, &worker));
  grpc::Server* server = worker.server.get();
  v1::Worker::Stub* stub = worker.stub.get();
  constexpr int kStreams = 8;
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>>>
      streams;
  for (int i = 0; i < kStreams; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    contexts.back()->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    streams.push_back(stub->Attach(contexts.back().get()));
  }
  for (int i = 0; i < kStreams; ++i) {
    v1::SessionResponse response;
    EXPECT_FALSE(streams[i]->Read(&response));  // nothing was sent: the worker gives up
    // (The client's own deadline would say DEADLINE_EXCEEDED, after 10 s.)
    EXPECT_EQ(streams[i]->Finish().error_code(), grpc::StatusCode::CANCELLED) << i;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // A stream that does open in time is served as usual.
  grpc::ClientContext context;
  auto stream = stub->Attach(&context);
  v1::SessionRequest open;
  open.mutable_open();
  ASSERT_TRUE(stream->Write(open));
  v1::SessionResponse response;
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_TRUE(response.has_opened());
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // past the open timeout
  open.set_request_id(2);
  open.mutable_sync()->add_tokens(1);
  ASSERT_TRUE(stream->Write(open));
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(response.sync().cached_tokens(), 1);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
  server->Shutdown();
}

TEST(WorkerServiceIdleTest, AnIdleStreamIsCancelledAndItsSessionFreed) {
  testing::TestServerOptions options;
  options.context_size = 32;
  options.idle_timeout = absl::Milliseconds(300);
  testing::TestWorkerServer worker;
  ASSERT_OK(testing::StartTestWorkerServer(options, &worker));
  WorkerEngine* engine = worker.engine.get();
  grpc::Server* server = worker.server.get();
  v1::Worker::Stub* stub = worker.stub.get();
  grpc::ClientContext context;
  auto stream = stub->Attach(&context);
  v1::SessionRequest open;
  open.mutable_open();
  ASSERT_TRUE(stream->Write(open));
  v1::SessionResponse response;
  ASSERT_TRUE(stream->Read(&response));
  EXPECT_EQ(engine->active_sessions(), 1);
  // Nothing more is sent: within a few ticks the worker cancels the stream.
  EXPECT_FALSE(stream->Read(&response));
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  for (int i = 0; i < 100 && engine->active_sessions() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(engine->active_sessions(), 0);
  server->Shutdown();
}

}  // namespace
}  // namespace tandem
