// The coordinator's client of one worker: unary Describe/Tokenize, and Attach streams that
// carry one session's sync/draft/verify requests in order.
//
// WorkerClient is thread-safe; a WorkerStream is used by one request at a time.
#ifndef TANDEM_SERVICES_COORDINATOR_WORKER_CLIENT_H_
#define TANDEM_SERVICES_COORDINATOR_WORKER_CLIENT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "tandem/v1/worker.grpc.pb.h"

namespace tandem {

class WorkerStream {
 public:
  WorkerStream(
      std::unique_ptr<grpc::ClientContext> context,
      std::unique_ptr<grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>> stream,
      std::string address);
  ~WorkerStream();  // closes the stream: the worker frees the session's cache

  // Sends one request and waits for its response. A RequestError becomes its status code and
  // message; a broken stream is kUnavailable naming the worker (the stream is then dead).
  absl::StatusOr<v1::SessionResponse> Call(v1::SessionRequest request);

  bool dead() const { return dead_; }
  const std::string& address() const { return address_; }
  // Cancels the stream from another thread (client cancellation).
  void Cancel();

 private:
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>> stream_;
  std::string address_;
  uint64_t next_id_ = 1;
  bool dead_ = false;
  bool finished_ = false;  // Finish() may be called only once
};

class WorkerClient {
 public:
  explicit WorkerClient(std::string address);
  // For tests: an existing channel (e.g. an in-process one).
  WorkerClient(std::string address, std::shared_ptr<grpc::Channel> channel);

  const std::string& address() const { return address_; }

  absl::StatusOr<v1::DescribeResponse> Describe(bool include_vocabulary,
                                                absl::Duration timeout = absl::Seconds(30));
  // Waits until Describe succeeds (the worker is up and has loaded its model) or `timeout`.
  absl::StatusOr<v1::DescribeResponse> WaitReady(bool include_vocabulary, absl::Duration timeout);
  absl::StatusOr<v1::TokenizeResponse> Tokenize(const v1::TokenizeRequest& request);
  // Waits until the channel is connected (e.g. a restarted worker is back); false on timeout.
  bool WaitConnected(absl::Duration timeout);
  // Opens a session stream (sends `open`). kResourceExhausted when the worker is full.
  absl::StatusOr<std::unique_ptr<WorkerStream>> Attach(const std::string& session_id,
                                                       int32_t context_size);

 private:
  std::string address_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Worker::Stub> stub_;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_WORKER_CLIENT_H_
