// The coordinator's client of one worker: unary Describe/Tokenize, and Attach streams that
// carry one session's sync/draft/verify requests in order.
//
// Nothing waits for a worker without a deadline: unary calls carry a gRPC deadline, and every
// Call on a stream (and its open and close) is bounded by a CallTimer that cancels the stream
// when the answer is late. Channels send HTTP/2 keepalive pings, so a peer that stops
// answering (a frozen host, a partition without RST) breaks its streams even when idle.
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
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "services/coordinator/call_timer.h"
#include "tandem/v1/worker.grpc.pb.h"

namespace tandem {

struct WorkerClientOptions {
  absl::Duration unary_timeout = absl::Seconds(30);  // Describe at start-up
  absl::Duration open_timeout = absl::Seconds(10);   // Attach's open handshake
  absl::Duration close_timeout = absl::Seconds(2);   // draining a stream when it closes
  absl::Duration keepalive_time = absl::Seconds(10);
  absl::Duration keepalive_timeout = absl::Seconds(5);
  // TLS or mutual TLS to the workers (tls_credentials.h); null: plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr;
  // The name the worker is known by when it is dialled by address (a headless Service's
  // pod IPs): sent as :authority and checked against its TLS certificate. "": the address.
  std::string authority;
};

// The channel arguments of a worker channel: message size, keepalive and authority.
grpc::ChannelArguments WorkerChannelArguments(const WorkerClientOptions& options);

class WorkerStream {
 public:
  WorkerStream(
      std::unique_ptr<grpc::ClientContext> context,
      std::unique_ptr<grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>> stream,
      std::string address, std::shared_ptr<CallTimer> timer, absl::Duration close_timeout);
  ~WorkerStream();  // closes the stream (within close_timeout): the worker frees the cache

  // Sends one request and waits up to `timeout` for its response. A RequestError becomes its
  // status code and message; a broken stream is kUnavailable and a late answer
  // kDeadlineExceeded, both naming the worker (the stream is then dead).
  absl::StatusOr<v1::SessionResponse> Call(v1::SessionRequest request, absl::Duration timeout);

  bool dead() const { return dead_; }
  const std::string& address() const { return address_; }
  // Cancels the stream from another thread (client cancellation).
  void Cancel();

 private:
  absl::Status Broken(bool timed_out, absl::Duration timeout);

  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>> stream_;
  std::string address_;
  std::shared_ptr<CallTimer> timer_;
  absl::Duration close_timeout_;
  uint64_t next_id_ = 1;
  bool dead_ = false;
  bool finished_ = false;  // Finish() may be called only once
};

class WorkerClient {
 public:
  explicit WorkerClient(std::string address, const WorkerClientOptions& options = {});
  // For tests: an existing channel (e.g. an in-process one).
  WorkerClient(std::string address, std::shared_ptr<grpc::Channel> channel,
               const WorkerClientOptions& options = {});

  const std::string& address() const { return address_; }
  const WorkerClientOptions& options() const { return options_; }

  // `include_tokenizer`: DescribeRequest.include_tokenizer (the whole tokenizer, large).
  absl::StatusOr<v1::DescribeResponse> Describe(bool include_vocabulary, absl::Duration timeout,
                                                bool include_tokenizer = false);
  // True while the channel has a connection to a process on the address (one that answers
  // at all, if only "loading"): what tells a starting worker from a port nobody listens on.
  bool Connected() const;
  // Waits until Describe succeeds (the worker is up and has loaded its model) or `timeout`.
  absl::StatusOr<v1::DescribeResponse> WaitReady(bool include_vocabulary, absl::Duration timeout,
                                                 bool include_tokenizer = false);
  absl::StatusOr<v1::TokenizeResponse> Tokenize(const v1::TokenizeRequest& request,
                                                absl::Duration timeout);
  // --- #30 embeddings ---
  // Worker.Embed, bounded by `deadline`.
  absl::StatusOr<v1::EmbedTokensResponse> Embed(const v1::EmbedTokensRequest& request,
                                                absl::Time deadline);
  // --- end ---
  // Opens a session stream (sends `open`, waits up to `timeout` for the answer).
  // kResourceExhausted when the worker is full, kDeadlineExceeded when it does not answer.
  absl::StatusOr<std::unique_ptr<WorkerStream>> Attach(const std::string& session_id,
                                                       int32_t context_size,
                                                       absl::Duration timeout);
  absl::StatusOr<std::unique_ptr<WorkerStream>> Attach(const std::string& session_id,
                                                       int32_t context_size) {
    return Attach(session_id, context_size, options_.open_timeout);
  }

 private:
  std::string address_;
  WorkerClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Worker::Stub> stub_;
  std::shared_ptr<CallTimer> timer_;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_WORKER_CLIENT_H_
