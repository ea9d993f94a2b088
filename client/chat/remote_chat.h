// tandem-chat --server: the same conversation loop as ChatEngine, but each turn is a
// Generate call to a coordinator. The conversation is sent whole every turn with a session
// id, so the workers' caches are reused and only the new tokens run.
//
// Every call is bounded: the connection check by `connect_timeout`, a turn by `turn_timeout`
// (a frozen coordinator costs at most that), closing a session by a few seconds. A reply
// stream that breaks off (a message that cannot be read, a stream that ends without its final
// message) is cancelled at once instead of waiting for a server that may never finish, and
// every error says which coordinator and what happened.
//
// Not thread-safe: one conversation.
#ifndef TANDEM_CLIENT_CHAT_REMOTE_CHAT_H_
#define TANDEM_CLIENT_CHAT_REMOTE_CHAT_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/chat/chat_engine.h"
#include "grpcpp/security/credentials.h"
#include "tandem/v1/generator.grpc.pb.h"

namespace tandem {

struct RemoteChatOptions {
  absl::Duration connect_timeout = absl::Seconds(10);  // Create's DescribeModel call
  absl::Duration turn_timeout = absl::Seconds(600);    // one whole Generate call
  // TLS to the coordinator (wire/tls_credentials.h); null: plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr;
  std::string api_key = "";  // sent as `authorization: Bearer KEY` on every call; empty: none
  // Tools the model may call: OpenAI's tools array as JSON text (empty: none), and the
  // tool_choice ("", auto, none, required, or a tool's name). The reply's calls are printed
  // as "[tool call ID] NAME(ARGUMENTS)"; a reasoning model's reasoning as "[reasoning] ...".
  std::string tools_json = "";
  std::string tool_choice = "";
  // The text each reply is expected to mostly be (OpenAI's Predicted Outputs; empty: none).
  std::string prediction = "";
};

class RemoteChat {
 public:
  // Connects and checks the coordinator answers DescribeModel within connect_timeout
  // (kUnavailable naming the address and what gRPC said otherwise). Uses options' sampler,
  // format, system, max_tokens and draft settings.
  static absl::StatusOr<std::unique_ptr<RemoteChat>> Create(const std::string& address,
                                                            const ChatOptions& options,
                                                            const RemoteChatOptions& remote = {});
  ~RemoteChat();

  // The coordinator's error codes as they are (kDeadlineExceeded when turn_timeout ran out,
  // kUnavailable when the coordinator went away), with the address and the cause in the
  // message; kDataLoss for a stream that ended or broke off without its final message.
  absl::StatusOr<TurnResult> Turn(absl::string_view user_text,
                                  const std::function<void(absl::string_view)>& on_text);
  void Reset();
  bool speculative() const { return speculative_; }

 private:
  RemoteChat() = default;
  void NewSessionId();
  v1::GenerateRequest Request(absl::string_view user_text) const;
  // Sets the deadline and the API key of a call.
  void Prepare(grpc::ClientContext& context, absl::Duration timeout) const;

  ChatOptions options_;
  RemoteChatOptions remote_;
  std::vector<v1::Tool> tools_;  // from remote_.tools_json
  v1::ToolChoice tool_choice_;
  std::string address_;
  std::unique_ptr<v1::Generator::Stub> stub_;
  std::vector<std::pair<std::string, std::string>> conversation_;  // (role, content)
  std::string session_id_;
  bool speculative_ = false;
};

}  // namespace tandem

#endif  // TANDEM_CLIENT_CHAT_REMOTE_CHAT_H_
