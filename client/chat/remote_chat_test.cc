// RemoteChat against Generator servers that misbehave, over real loopback sockets: every call
// ends in bounded time and says what happened. The fakes stand in for a coordinator that is
// frozen, breaks its stream, or is not a gRPC server at all.
#include "client/chat/remote_chat.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

using Script =
    std::function<grpc::Status(grpc::ServerContext*, grpc::ServerWriter<v1::GenerateResponse>*)>;

// A Generator on 127.0.0.1:<port chosen by the OS> whose Generate runs `script`.
class FakeCoordinator : public v1::Generator::Service {
 public:
  explicit FakeCoordinator(Script script) : script_(std::move(script)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakeCoordinator() override {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

  grpc::Status DescribeModel(grpc::ServerContext*, const v1::DescribeModelRequest*,
                             v1::DescribeModelResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status CloseSession(grpc::ServerContext*, const v1::CloseSessionRequest*,
                            v1::CloseSessionResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status Generate(grpc::ServerContext* context, const v1::GenerateRequest* request,
                        grpc::ServerWriter<v1::GenerateResponse>* writer) override {
    {
      absl::MutexLock lock(&mutex_);
      last_request_ = *request;
    }
    return script_(context, writer);
  }
  v1::GenerateRequest last_request() {
    absl::MutexLock lock(&mutex_);
    return last_request_;
  }

 private:
  Script script_;
  absl::Mutex mutex_;
  v1::GenerateRequest last_request_ ABSL_GUARDED_BY(mutex_);
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// Waits (bounded) until the client cancels or 30 s pass.
void WaitForCancel(grpc::ServerContext* context) {
  const auto give_up = Clock::now() + std::chrono::seconds(30);
  while (!context->IsCancelled() && Clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

ChatOptions Options() {
  ChatOptions options;
  options.max_tokens = 8;
  return options;
}

// Runs one turn, failing the test (not hanging it) if it takes longer than `limit`.
absl::StatusOr<TurnResult> BoundedTurn(RemoteChat& chat, std::chrono::seconds limit,
                                       std::string* text) {
  auto turn = std::async(std::launch::async, [&] {
    return chat.Turn("hi", [&](absl::string_view t) { text->append(t.data(), t.size()); });
  });
  if (turn.wait_for(limit) != std::future_status::ready) {
    ADD_FAILURE() << "the turn did not end within " << limit.count() << " s";
  }
  return turn.get();  // the fakes give up after 30 s, so this returns
}

TEST(RemoteChatTest, ABrokenReplyStreamIsCancelledAndReportedAtOnce) {
  // A message the client cannot parse (a proto3 string that is not UTF-8), then more and
  // more deltas, as a server would stream on: before the fix Finish waited for ever.
  FakeCoordinator fake(
      [](grpc::ServerContext* context, grpc::ServerWriter<v1::GenerateResponse>* writer) {
        v1::GenerateResponse good;
        good.mutable_delta()->set_text("Once");
        writer->Write(good);
        v1::GenerateResponse bad;
        bad.mutable_delta()->set_text(std::string("\xFF\xFE", 2));
        writer->Write(bad);
        v1::GenerateResponse more;
        more.mutable_delta()->set_text(std::string(1 << 16, 'x'));
        const auto give_up = Clock::now() + std::chrono::seconds(30);
        while (!context->IsCancelled() && Clock::now() < give_up && writer->Write(more)) {
        }
        return grpc::Status::OK;
      });
  ASSERT_OK_AND_ASSIGN(auto chat, RemoteChat::Create(fake.address(), Options()));
  std::string text;
  const auto start = Clock::now();
  absl::StatusOr<TurnResult> turn = BoundedTurn(*chat, std::chrono::seconds(20), &text);
  EXPECT_THAT(turn, StatusIs(absl::StatusCode::kDataLoss,
                             ::testing::AllOf(HasSubstr(fake.address()),
                                              HasSubstr("broke off without its final message"))));
  EXPECT_EQ(text, "Once");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
}

TEST(RemoteChatTest, AFrozenCoordinatorCostsTheTurnTimeoutAndSaysSo) {
  FakeCoordinator fake([](grpc::ServerContext* context, grpc::ServerWriter<v1::GenerateResponse>*) {
    WaitForCancel(context);
    return grpc::Status::OK;
  });
  RemoteChatOptions remote;
  remote.turn_timeout = absl::Seconds(1);
  ASSERT_OK_AND_ASSIGN(auto chat, RemoteChat::Create(fake.address(), Options(), remote));
  std::string text;
  const auto start = Clock::now();
  EXPECT_THAT(BoundedTurn(*chat, std::chrono::seconds(20), &text),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       ::testing::AllOf(HasSubstr(fake.address()), HasSubstr("--timeout 1s"))));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
}

TEST(RemoteChatTest, ServerErrorsKeepTheirCodeAndNameTheCoordinator) {
  FakeCoordinator fake([](grpc::ServerContext*, grpc::ServerWriter<v1::GenerateResponse>*) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "sampler top_p must be in (0, 1]");
  });
  ASSERT_OK_AND_ASSIGN(auto chat, RemoteChat::Create(fake.address(), Options()));
  std::string text;
  EXPECT_THAT(BoundedTurn(*chat, std::chrono::seconds(20), &text),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr(fake.address()), HasSubstr("top_p"))));
}

// A reply with its final message: the turn succeeds.
grpc::Status Reply(grpc::ServerContext*, grpc::ServerWriter<v1::GenerateResponse>* writer) {
  v1::GenerateResponse delta;
  delta.mutable_delta()->set_text("{}");
  writer->Write(delta);
  v1::GenerateResponse final;
  final.mutable_final()->set_finish_reason(v1::FINISH_REASON_STOP_TOKEN);
  writer->Write(final);
  return grpc::Status::OK;
}

TEST(RemoteChatTest, TheConstraintGoesWithEveryTurn) {
  FakeCoordinator fake(Reply);
  ChatOptions options = Options();
  options.constraint = {ConstraintSpec::Kind::kJsonSchema, R"({"type": "object"})"};
  ASSERT_OK_AND_ASSIGN(auto chat, RemoteChat::Create(fake.address(), options));
  std::string text;
  for (int turn = 0; turn < 2; ++turn) {  // a follow-up starts a fresh constraint: send it again
    ASSERT_OK(BoundedTurn(*chat, std::chrono::seconds(20), &text).status());
    const v1::GenerateRequest request = fake.last_request();
    ASSERT_TRUE(request.constraint().has_json_schema()) << request.ShortDebugString();
    EXPECT_EQ(request.constraint().json_schema().schema(), R"({"type": "object"})");
  }
}

TEST(RemoteChatTest, NoConstraintSendsNone) {
  FakeCoordinator fake(Reply);
  ASSERT_OK_AND_ASSIGN(auto chat, RemoteChat::Create(fake.address(), Options()));
  std::string text;
  ASSERT_OK(BoundedTurn(*chat, std::chrono::seconds(20), &text).status());
  EXPECT_FALSE(fake.last_request().has_constraint());
}

TEST(RemoteChatTest, APortThatAcceptsButNeverAnswersFailsWithinTheConnectTimeout) {
  // A TCP listener that never speaks HTTP/2 (the kernel completes the handshake).
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(listener, 8), 0);
  socklen_t length = sizeof(address);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string target = absl::StrCat("127.0.0.1:", ntohs(address.sin_port));
  RemoteChatOptions remote;
  remote.connect_timeout = absl::Seconds(1);
  const auto start = Clock::now();
  EXPECT_THAT(RemoteChat::Create(target, Options(), remote),
              StatusIs(absl::StatusCode::kUnavailable,
                       ::testing::AllOf(HasSubstr(target), HasSubstr("DEADLINE_EXCEEDED"))));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  close(listener);
}

}  // namespace
}  // namespace tandem
