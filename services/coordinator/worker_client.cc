#include "services/coordinator/worker_client.h"

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "services/common/grpc_status.h"

namespace tandem {
namespace {

std::chrono::system_clock::time_point Deadline(absl::Duration timeout) {
  return std::chrono::system_clock::now() +
         std::chrono::microseconds(absl::ToInt64Microseconds(timeout));
}

std::shared_ptr<grpc::Channel> NewChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

}  // namespace

WorkerStream::WorkerStream(
    std::unique_ptr<grpc::ClientContext> context,
    std::unique_ptr<grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>> stream,
    std::string address)
    : context_(std::move(context)), stream_(std::move(stream)), address_(std::move(address)) {}

WorkerStream::~WorkerStream() {
  if (finished_) return;
  if (!dead_) {
    stream_->WritesDone();
    v1::SessionResponse ignored;
    while (stream_->Read(&ignored)) {
    }
  } else {
    context_->TryCancel();
  }
  stream_->Finish();
}

void WorkerStream::Cancel() { context_->TryCancel(); }

absl::StatusOr<v1::SessionResponse> WorkerStream::Call(v1::SessionRequest request) {
  if (dead_) return absl::UnavailableError(absl::StrCat("worker ", address_, ": stream closed"));
  request.set_request_id(next_id_++);
  VLOG(2) << "worker " << address_ << ": " << request.ShortDebugString().substr(0, 120);
  v1::SessionResponse response;
  if (!stream_->Write(request) || !stream_->Read(&response)) {
    dead_ = true;
    context_->TryCancel();
    const grpc::Status status = stream_->Finish();
    finished_ = true;
    return absl::UnavailableError(absl::StrCat(
        "worker ", address_, " failed: ", status.ok() ? "stream ended" : status.error_message()));
  }
  if (response.request_id() != request.request_id()) {
    dead_ = true;
    return absl::InternalError(absl::StrCat("worker ", address_, " answered request ",
                                            response.request_id(), " for ", request.request_id()));
  }
  if (response.has_error()) {
    return FromRequestError(response.error().code(),  // an unknown code or 0 is kUnknown
                            absl::StrCat("worker ", address_, ": ", response.error().message()));
  }
  return response;
}

WorkerClient::WorkerClient(std::string address) : WorkerClient(address, NewChannel(address)) {}

WorkerClient::WorkerClient(std::string address, std::shared_ptr<grpc::Channel> channel)
    : address_(std::move(address)),
      channel_(std::move(channel)),
      stub_(v1::Worker::NewStub(channel_)) {}

absl::StatusOr<v1::DescribeResponse> WorkerClient::Describe(bool include_vocabulary,
                                                            absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(Deadline(timeout));
  v1::DescribeRequest request;
  request.set_include_vocabulary(include_vocabulary);
  v1::DescribeResponse response;
  const grpc::Status status = stub_->Describe(&context, request, &response);
  if (!status.ok()) {
    const absl::Status s = FromGrpcStatus(status);
    return absl::Status(s.code(), absl::StrCat("worker ", address_, ": ", s.message()));
  }
  return response;
}

absl::StatusOr<v1::DescribeResponse> WorkerClient::WaitReady(bool include_vocabulary,
                                                             absl::Duration timeout) {
  const absl::Time give_up = absl::Now() + timeout;
  absl::Time next_note = absl::Now() + absl::Seconds(1);  // a line every few seconds
  while (true) {
    absl::StatusOr<v1::DescribeResponse> response = Describe(include_vocabulary, absl::Seconds(10));
    if (response.ok() || response.status().code() != absl::StatusCode::kUnavailable ||
        absl::Now() > give_up) {
      return response;
    }
    if (absl::Now() >= next_note) {
      LOG(INFO) << "waiting for worker " << address_ << " (up to "
                << absl::FormatDuration(absl::Trunc(give_up - absl::Now(), absl::Seconds(1)))
                << " more): " << response.status().message();
      next_note = absl::Now() + absl::Seconds(5);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

bool WorkerClient::WaitConnected(absl::Duration timeout) {
  return channel_->WaitForConnected(Deadline(timeout));
}

absl::StatusOr<v1::TokenizeResponse> WorkerClient::Tokenize(const v1::TokenizeRequest& request) {
  grpc::ClientContext context;
  context.set_deadline(Deadline(absl::Seconds(30)));
  v1::TokenizeResponse response;
  const grpc::Status status = stub_->Tokenize(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::StatusOr<std::unique_ptr<WorkerStream>> WorkerClient::Attach(const std::string& session_id,
                                                                   int32_t context_size) {
  auto context = std::make_unique<grpc::ClientContext>();
  auto stream = stub_->Attach(context.get());
  v1::SessionRequest open;
  open.set_request_id(0);
  open.mutable_open()->set_session_id(session_id);
  open.mutable_open()->set_context_size(context_size);
  v1::SessionResponse response;
  if (!stream->Write(open) || !stream->Read(&response)) {
    const grpc::Status status = stream->Finish();
    const absl::Status s =
        status.ok() ? absl::UnavailableError("stream ended") : FromGrpcStatus(status);
    return absl::Status(s.code(), absl::StrCat("worker ", address_, ": ", s.message()));
  }
  return std::make_unique<WorkerStream>(std::move(context), std::move(stream), address_);
}

}  // namespace tandem
