#include "services/coordinator/worker_client.h"

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "wire/grpc_status.h"
#include "wire/worker_error.h"

namespace tandem {
namespace {

std::chrono::system_clock::time_point Deadline(absl::Duration timeout) {
  return std::chrono::system_clock::now() +
         std::chrono::microseconds(absl::ToInt64Microseconds(timeout));
}

int Milliseconds(absl::Duration d) {
  return static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(d), 1 << 30));
}

}  // namespace

grpc::ChannelArguments WorkerChannelArguments(const WorkerClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  // Pings find a peer that stopped answering; the workers' servers permit them (grpc_server.cc).
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, Milliseconds(options.keepalive_time));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, Milliseconds(options.keepalive_timeout));
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // A restarted worker is retried soon, not after the default back-off of up to 2 minutes.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  if (!options.authority.empty()) args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, options.authority);
  return args;
}

WorkerStream::WorkerStream(
    std::unique_ptr<grpc::ClientContext> context,
    std::unique_ptr<grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>> stream,
    std::string address, std::shared_ptr<CallTimer> timer, absl::Duration close_timeout)
    : context_(std::move(context)),
      stream_(std::move(stream)),
      address_(std::move(address)),
      timer_(std::move(timer)),
      close_timeout_(close_timeout) {}

WorkerStream::~WorkerStream() {
  if (finished_) return;
  if (!dead_) {
    // A polite close, bounded: a frozen worker must not hold up the session's teardown.
    const CallTimer::Ticket ticket = timer_->Arm(context_.get(), absl::Now() + close_timeout_);
    stream_->WritesDone();
    v1::SessionResponse ignored;
    while (stream_->Read(&ignored)) {
    }
    timer_->Disarm(ticket);
  } else {
    context_->TryCancel();
  }
  stream_->Finish();
}

void WorkerStream::Cancel() { context_->TryCancel(); }

absl::Status WorkerStream::Broken(bool timed_out, absl::Duration timeout) {
  dead_ = true;
  // The call is over (or cancelled by the timer): Finish gives its status. Bounded anyway.
  const CallTimer::Ticket ticket = timer_->Arm(context_.get(), absl::Now() + close_timeout_);
  const grpc::Status status = stream_->Finish();
  timer_->Disarm(ticket);
  finished_ = true;
  if (timed_out) {
    return absl::DeadlineExceededError(absl::StrCat("worker ", address_, " did not answer within ",
                                                    absl::FormatDuration(timeout)));
  }
  return absl::UnavailableError(absl::StrCat(
      "worker ", address_, " failed: ", status.ok() ? "stream ended" : status.error_message()));
}

absl::StatusOr<v1::SessionResponse> WorkerStream::Call(v1::SessionRequest request,
                                                       absl::Duration timeout) {
  if (dead_) return absl::UnavailableError(absl::StrCat("worker ", address_, ": stream closed"));
  request.set_request_id(next_id_++);
  VLOG(2) << "worker " << address_ << ": " << request.ShortDebugString().substr(0, 120);
  v1::SessionResponse response;
  const CallTimer::Ticket ticket = timer_->Arm(context_.get(), absl::Now() + timeout);
  const bool answered = stream_->Write(request) && stream_->Read(&response);
  const bool timed_out = timer_->Disarm(ticket);
  if (!answered || timed_out) return Broken(timed_out, timeout);
  if (response.request_id() != request.request_id()) {
    dead_ = true;
    return absl::InternalError(absl::StrCat("worker ", address_, " answered request ",
                                            response.request_id(), " for ", request.request_id()));
  }
  if (response.has_error()) {
    return FromRequestError(response.error(), absl::StrCat("worker ", address_, ": "));
  }
  return response;
}

WorkerClient::WorkerClient(std::string address, const WorkerClientOptions& options)
    : WorkerClient(address,
                   grpc::CreateCustomChannel(address,
                                             options.credentials != nullptr
                                                 ? options.credentials
                                                 : grpc::InsecureChannelCredentials(),
                                             WorkerChannelArguments(options)),
                   options) {}

WorkerClient::WorkerClient(std::string address, std::shared_ptr<grpc::Channel> channel,
                           const WorkerClientOptions& options)
    : address_(std::move(address)),
      options_(options),
      channel_(std::move(channel)),
      stub_(v1::Worker::NewStub(channel_)),
      timer_(std::make_shared<CallTimer>()) {}

absl::StatusOr<v1::DescribeResponse> WorkerClient::Describe(bool include_vocabulary,
                                                            absl::Duration timeout,
                                                            bool include_tokenizer) {
  grpc::ClientContext context;
  context.set_deadline(Deadline(timeout));
  v1::DescribeRequest request;
  request.set_include_vocabulary(include_vocabulary);
  request.set_include_tokenizer(include_tokenizer);
  v1::DescribeResponse response;
  const grpc::Status status = stub_->Describe(&context, request, &response);
  if (!status.ok()) {
    const absl::Status s = FromGrpcStatus(status);
    return absl::Status(s.code(), absl::StrCat("worker ", address_, ": ", s.message()));
  }
  return response;
}

bool WorkerClient::Connected() const {
  return channel_->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_READY;
}

absl::StatusOr<v1::DescribeResponse> WorkerClient::WaitReady(bool include_vocabulary,
                                                             absl::Duration timeout,
                                                             bool include_tokenizer) {
  const absl::Time give_up = absl::Now() + timeout;
  absl::Time next_note = absl::Now() + absl::Seconds(1);  // a line every few seconds
  while (true) {
    absl::StatusOr<v1::DescribeResponse> response =
        Describe(include_vocabulary, options_.unary_timeout, include_tokenizer);
    const bool retry = response.status().code() == absl::StatusCode::kUnavailable ||
                       response.status().code() == absl::StatusCode::kDeadlineExceeded;
    if (response.ok() || !retry || absl::Now() > give_up) return response;
    if (absl::Now() >= next_note) {
      LOG(INFO) << "waiting for worker " << address_ << " (up to "
                << absl::FormatDuration(absl::Trunc(give_up - absl::Now(), absl::Seconds(1)))
                << " more): " << response.status().message();
      next_note = absl::Now() + absl::Seconds(5);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

absl::StatusOr<v1::TokenizeResponse> WorkerClient::Tokenize(const v1::TokenizeRequest& request,
                                                            absl::Duration timeout) {
  grpc::ClientContext context;
  context.set_deadline(Deadline(timeout));
  v1::TokenizeResponse response;
  const grpc::Status status = stub_->Tokenize(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

// --- #30 embeddings ---
absl::StatusOr<v1::EmbedTokensResponse> WorkerClient::Embed(const v1::EmbedTokensRequest& request,
                                                            absl::Time deadline) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(deadline));
  v1::EmbedTokensResponse response;
  const grpc::Status status = stub_->Embed(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}
// --- end ---

absl::StatusOr<std::unique_ptr<WorkerStream>> WorkerClient::Attach(const std::string& session_id,
                                                                   int32_t context_size,
                                                                   absl::Duration timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  const CallTimer::Ticket ticket = timer_->Arm(context.get(), absl::Now() + timeout);
  auto stream = stub_->Attach(context.get());
  v1::SessionRequest open;
  open.set_request_id(0);
  open.mutable_open()->set_session_id(session_id);
  open.mutable_open()->set_context_size(context_size);
  v1::SessionResponse response;
  const bool answered = stream->Write(open) && stream->Read(&response);
  const bool timed_out = timer_->Disarm(ticket);
  if (!answered || timed_out) {
    const CallTimer::Ticket finish =
        timer_->Arm(context.get(), absl::Now() + options_.close_timeout);
    const grpc::Status status = stream->Finish();
    timer_->Disarm(finish);
    const absl::Status s = timed_out
                               ? absl::DeadlineExceededError(absl::StrCat(
                                     "no answer to open within ", absl::FormatDuration(timeout)))
                           : status.ok() ? absl::UnavailableError("stream ended")
                                         : FromGrpcStatus(status);
    return absl::Status(s.code(), absl::StrCat("worker ", address_, ": ", s.message()));
  }
  return std::make_unique<WorkerStream>(std::move(context), std::move(stream), address_, timer_,
                                        options_.close_timeout);
}

}  // namespace tandem
