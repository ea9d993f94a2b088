#include "client/chat/remote_chat.h"

#include <chrono>
#include <random>

#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "services/common/grpc_status.h"

namespace tandem {
namespace {

// The final message's figures as a GenerationResult, so both modes print alike.
GenerationResult FromFinal(const v1::GenerationResult& r) {
  GenerationResult g;
  g.stats.reused_tokens = r.usage().cached_prompt_tokens();
  g.stats.prompt_tokens = r.usage().prompt_tokens() - r.usage().cached_prompt_tokens();
  g.stats.generated_tokens = r.usage().generated_tokens();
  g.stats.prefill_seconds = r.timing().prefill_seconds();
  g.stats.decode_seconds = r.timing().decode_seconds();
  const v1::SpeculationStats& s = r.speculation();
  g.speculation.rounds = s.rounds();
  g.speculation.drafted = s.drafted_tokens();
  g.speculation.accepted = s.accepted_tokens();
  g.speculation.round_tokens = s.accepted_tokens() + s.rounds();
  return g;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RemoteChat>> RemoteChat::Create(const std::string& address,
                                                               const ChatOptions& options) {
  std::unique_ptr<RemoteChat> chat(new RemoteChat());
  chat->options_ = options;
  chat->address_ = address;
  chat->stub_ =
      v1::Generator::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::DescribeModelResponse model;
  const grpc::Status status =
      chat->stub_->DescribeModel(&context, v1::DescribeModelRequest(), &model);
  if (!status.ok()) {
    return absl::UnavailableError(
        absl::StrCat("coordinator ", address, ": ", status.error_message()));
  }
  chat->speculative_ = model.has_draft();
  chat->NewSessionId();
  return chat;
}

RemoteChat::~RemoteChat() {
  if (!conversation_.empty()) Reset();  // frees the session's caches on the workers
}

void RemoteChat::NewSessionId() {
  std::random_device random;
  session_id_ = absl::StrCat("tandem-chat-", random(), random());
}

void RemoteChat::Reset() {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::CloseSessionRequest request;
  request.set_session_id(session_id_);
  v1::CloseSessionResponse response;
  stub_->CloseSession(&context, request, &response);  // NOT_FOUND is fine: nothing to free
  conversation_.clear();
  NewSessionId();
}

absl::StatusOr<TurnResult> RemoteChat::Turn(absl::string_view user_text,
                                            const std::function<void(absl::string_view)>& on_text) {
  v1::GenerateRequest request;
  v1::ChatConversation* chat = request.mutable_chat();
  if (!options_.system.empty()) {
    v1::ChatMessage* system = chat->add_messages();
    system->set_role("system");
    system->set_content(options_.system);
  }
  for (const auto& [role, content] : conversation_) {
    v1::ChatMessage* m = chat->add_messages();
    m->set_role(role);
    m->set_content(content);
  }
  v1::ChatMessage* user = chat->add_messages();
  user->set_role("user");
  user->set_content(std::string(user_text));
  chat->set_format(options_.format);
  v1::SamplingParams* s = request.mutable_sampling();
  s->set_temperature(options_.sampler.temperature);
  s->set_top_k(options_.sampler.top_k);
  s->set_top_p(options_.sampler.top_p);
  s->set_min_p(options_.sampler.min_p);
  s->set_repetition_penalty(options_.sampler.repetition_penalty);
  s->set_penalty_window(options_.sampler.penalty_window);
  s->set_seed(options_.sampler.seed);
  request.set_max_tokens(static_cast<int32_t>(options_.max_tokens));
  request.mutable_speculation()->set_draft_tokens(options_.draft_tokens);
  request.mutable_speculation()->set_adaptive(options_.adaptive_draft);
  request.set_session_id(session_id_);

  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1::GenerateResponse>> reader =
      stub_->Generate(&context, request);
  TurnResult turn;
  v1::GenerateResponse response;
  while (reader->Read(&response)) {
    if (response.has_delta()) {
      turn.reply += response.delta().text();
      if (!response.delta().text().empty()) on_text(response.delta().text());
    } else if (response.has_final()) {
      turn.generation = FromFinal(response.final());
    }
  }
  const grpc::Status status = reader->Finish();
  if (!status.ok()) return FromGrpcStatus(status);
  conversation_.emplace_back("user", std::string(user_text));
  conversation_.emplace_back("assistant", turn.reply);
  return turn;
}

}  // namespace tandem
