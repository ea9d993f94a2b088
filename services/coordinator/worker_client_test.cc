// WorkerClient against an in-process worker that answers late or never (a frozen host, as
// far as gRPC can tell): every wait ends at its deadline with kDeadlineExceeded.
#include "services/coordinator/worker_client.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "wire/grpc_server.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

// Answers `open` (unless silent_open) and then each request after `delay`, or never when
// `silent`; a silent handler waits (at most 10 s) for the call to be cancelled.
class SlowWorker final : public v1::Worker::Service {
 public:
  std::atomic<bool> silent_open{false};
  std::atomic<bool> silent{false};
  std::atomic<bool> hold_after_close{false};  // never ends the stream after the client's close
  std::atomic<int> delay_ms{0};
  std::atomic<int> cancelled{0};

  grpc::Status Attach(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::SessionResponse, v1::SessionRequest>* stream) override {
    v1::SessionRequest request;
    if (!stream->Read(&request)) return grpc::Status::OK;
    if (silent_open) return WaitForCancel(context);
    v1::SessionResponse response;
    response.set_request_id(request.request_id());
    response.mutable_opened();
    stream->Write(response);
    while (stream->Read(&request)) {
      if (silent) return WaitForCancel(context);
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms.load()));
      response.Clear();
      response.set_request_id(request.request_id());
      response.mutable_sync()->set_cached_tokens(request.sync().tokens_size());
      if (!stream->Write(response)) break;
    }
    if (hold_after_close) return WaitForCancel(context);
    return grpc::Status::OK;
  }

 private:
  grpc::Status WaitForCancel(grpc::ServerContext* context) {
    for (int i = 0; i < 2000 && !context->IsCancelled(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (context->IsCancelled()) ++cancelled;
    return grpc::Status::OK;
  }
};

class WorkerClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.RegisterService(&worker_);
    server_ = builder.BuildAndStart();
    WorkerClientOptions options;
    options.close_timeout = absl::Milliseconds(200);
    client_ = std::make_unique<WorkerClient>(
        "slow-worker", server_->InProcessChannel(grpc::ChannelArguments()), options);
  }
  void TearDown() override { server_->Shutdown(); }

  static v1::SessionRequest Sync() {
    v1::SessionRequest request;
    request.mutable_sync()->add_tokens(7);
    return request;
  }

  SlowWorker worker_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<WorkerClient> client_;
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST_F(WorkerClientTest, ACallAnsweredInTimeReturnsTheAnswer) {
  worker_.delay_ms = 20;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<WorkerStream> stream, client_->Attach("s", 0));
  ASSERT_OK_AND_ASSIGN(v1::SessionResponse response, stream->Call(Sync(), absl::Seconds(5)));
  EXPECT_EQ(response.sync().cached_tokens(), 1);
  EXPECT_FALSE(stream->dead());
}

TEST_F(WorkerClientTest, ACallNeverAnsweredEndsAtItsDeadlineAndCancelsTheStream) {
  worker_.silent = true;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<WorkerStream> stream, client_->Attach("s", 0));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(stream->Call(Sync(), absl::Milliseconds(150)),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("slow-worker")));
  const double waited = SecondsSince(start);
  EXPECT_GE(waited, 0.15);
  EXPECT_LT(waited, 2.0);
  EXPECT_TRUE(stream->dead());
  EXPECT_THAT(stream->Call(Sync(), absl::Seconds(1)), StatusIs(absl::StatusCode::kUnavailable));
  for (int i = 0; i < 400 && worker_.cancelled == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(worker_.cancelled, 1);  // the worker sees the stream end: it frees the session
}

TEST_F(WorkerClientTest, ALateAnswerIsADeadlineExceeded) {
  worker_.delay_ms = 600;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<WorkerStream> stream, client_->Attach("s", 0));
  EXPECT_THAT(stream->Call(Sync(), absl::Milliseconds(100)),
              StatusIs(absl::StatusCode::kDeadlineExceeded));
}

TEST_F(WorkerClientTest, AnOpenNeverAnsweredEndsAtItsDeadline) {
  worker_.silent_open = true;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(client_->Attach("s", 0, absl::Milliseconds(100)),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("slow-worker")));
  EXPECT_LT(SecondsSince(start), 2.0);
}

TEST_F(WorkerClientTest, ClosingAStreamOfAFrozenWorkerIsBounded) {
  worker_.hold_after_close = true;  // the worker never ends the stream
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<WorkerStream> stream, client_->Attach("s", 0));
  const auto start = std::chrono::steady_clock::now();
  stream.reset();
  const double waited = SecondsSince(start);
  EXPECT_GE(waited, 0.2);  // close_timeout
  EXPECT_LT(waited, 2.0);
}

TEST(WorkerKeepaliveTest, AnIdleStreamToATandemServerSurvivesKeepalivePings) {
  // Pings every second on an idle stream: a server that did not permit them would answer
  // with GOAWAY (too_many_pings) after two, breaking the stream.
  SlowWorker worker;
  ASSERT_OK_AND_ASSIGN(auto server, GrpcServer::Start({"127.0.0.1:0", ""}, {&worker}, nullptr));
  WorkerClientOptions options;
  options.keepalive_time = absl::Seconds(1);
  options.keepalive_timeout = absl::Seconds(1);
  WorkerClient client(server->address(), options);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<WorkerStream> stream, client.Attach("s", 0));
  std::this_thread::sleep_for(std::chrono::milliseconds(4500));
  v1::SessionRequest sync;
  sync.mutable_sync()->add_tokens(7);
  EXPECT_OK(stream->Call(sync, absl::Seconds(5)).status());
}

TEST(CallTimerTest, FiresOnlyForTicketsNotDisarmedInTime) {
  CallTimer timer;
  grpc::ClientContext early, late;
  const CallTimer::Ticket disarmed = timer.Arm(&early, absl::Now() + absl::Seconds(10));
  const CallTimer::Ticket fired = timer.Arm(&late, absl::Now() + absl::Milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(timer.Disarm(disarmed));
  EXPECT_TRUE(timer.Disarm(fired));
  EXPECT_FALSE(timer.Disarm(fired));  // a ticket is reported once
  const CallTimer::Ticket never = timer.Arm(&early, absl::InfiniteFuture());
  EXPECT_FALSE(timer.Disarm(never));
}

TEST(WorkerChannelArgumentsTest, WorkerChannelsSendKeepalivePings) {
  WorkerClientOptions options;
  options.keepalive_time = absl::Seconds(7);
  options.keepalive_timeout = absl::Seconds(3);
  const grpc::ChannelArguments arguments = WorkerChannelArguments(options);
  const grpc_channel_args args = arguments.c_channel_args();
  auto value = [&](const char* key) {
    for (size_t i = 0; i < args.num_args; ++i) {
      if (std::string(args.args[i].key) == key) return args.args[i].value.integer;
    }
    return -1;
  };
  EXPECT_EQ(value(GRPC_ARG_KEEPALIVE_TIME_MS), 7000);
  EXPECT_EQ(value(GRPC_ARG_KEEPALIVE_TIMEOUT_MS), 3000);
  EXPECT_EQ(value(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS), 1);
}

}  // namespace
}  // namespace tandem
