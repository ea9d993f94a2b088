// tandem-chat --server: the same conversation loop as ChatEngine, but each turn is a
// Generate call to a coordinator. The conversation is sent whole every turn with a session
// id, so the workers' caches are reused and only the new tokens run.
//
// Not thread-safe: one conversation.
#ifndef TANDEM_CLIENT_CHAT_REMOTE_CHAT_H_
#define TANDEM_CLIENT_CHAT_REMOTE_CHAT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/chat/chat_engine.h"
#include "tandem/v1/generator.grpc.pb.h"

namespace tandem {

class RemoteChat {
 public:
  // Connects and checks the coordinator answers DescribeModel (kUnavailable naming the
  // address otherwise). Uses options' sampler, format, system, max_tokens and draft settings.
  static absl::StatusOr<std::unique_ptr<RemoteChat>> Create(const std::string& address,
                                                            const ChatOptions& options);
  ~RemoteChat();

  absl::StatusOr<TurnResult> Turn(absl::string_view user_text,
                                  const std::function<void(absl::string_view)>& on_text);
  void Reset();
  bool speculative() const { return speculative_; }

 private:
  RemoteChat() = default;
  void NewSessionId();

  ChatOptions options_;
  std::string address_;
  std::unique_ptr<v1::Generator::Stub> stub_;
  std::vector<std::pair<std::string, std::string>> conversation_;  // (role, content)
  std::string session_id_;
  bool speculative_ = false;
};

}  // namespace tandem

#endif  // TANDEM_CLIENT_CHAT_REMOTE_CHAT_H_
