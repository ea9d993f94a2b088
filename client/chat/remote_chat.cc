#include "client/chat/remote_chat.h"

#include <chrono>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "client/chat/connect_error.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "wire/cost_model_proto.h"
#include "wire/grpc_status.h"
#include "wire/proto_convert.h"

namespace tandem {
namespace {

std::chrono::system_clock::time_point Deadline(absl::Duration timeout) {
  return std::chrono::system_clock::now() +
         std::chrono::microseconds(absl::ToInt64Microseconds(timeout));
}

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
  g.speculation.final_draft_tokens = s.final_draft_tokens();
  g.speculation.pipelined = s.pipelined();
  g.speculation.ahead_drafts = s.ahead_drafts();
  g.speculation.predrafted_rounds = s.predrafted_rounds();
  g.speculation.predicted = s.predicted_tokens();
  g.speculation.predicted_accepted = s.predicted_accepted_tokens();
  g.speculation.predicted_rounds = s.predicted_rounds();
  if (s.has_cost_model()) g.speculation.cost_model = CostEstimatesFromProto(s.cost_model());
  return g;
}

// Read also fails on a message it cannot parse while the server goes on writing; Finish then
// waits for a server blocked on the stream's flow control, for ever. A finished call's
// Finish returns at once, so one that does not within a moment is cancelled (cancelling
// right away would replace a server's own error status with CANCELLED).
grpc::Status FinishOrCancel(grpc::ClientReader<v1::GenerateResponse>& reader,
                            grpc::ClientContext& context, bool* cancelled) {
  absl::Notification finished;
  std::thread watchdog([&] {
    if (!finished.WaitForNotificationWithTimeout(absl::Seconds(2))) {
      *cancelled = true;
      context.TryCancel();
    }
  });
  grpc::Status status = reader.Finish();
  finished.Notify();
  watchdog.join();
  return status;
}

}  // namespace

namespace {

// --tools: OpenAI's tools array ([{"type": "function", "function": {...}}]).
absl::StatusOr<std::vector<v1::Tool>> ParseTools(const std::string& text) {
  std::vector<v1::Tool> tools;
  if (text.empty()) return tools;
  absl::StatusOr<json::Value> parsed = json::Parse(text);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tools file is not JSON: ", parsed.status().message()));
  }
  if (!parsed->is_array()) return absl::InvalidArgumentError("--tools file is not a JSON array");
  for (size_t i = 0; i < parsed->as_array().size(); ++i) {
    const json::Value& tool = parsed->as_array()[i];
    const json::Value* function = tool.is_object() ? tool.as_object().Find("function") : nullptr;
    const json::Value* name =
        function != nullptr && function->is_object() ? function->as_object().Find("name") : nullptr;
    if (name == nullptr || !name->is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tools[", i, "]: expected {\"type\": \"function\", \"function\": ",
                       "{\"name\": ...}}"));
    }
    v1::Tool& out = tools.emplace_back();
    out.set_name(name->as_string());
    const json::Value* description = function->as_object().Find("description");
    if (description != nullptr && description->is_string()) {
      out.set_description(description->as_string());
    }
    const json::Value* parameters = function->as_object().Find("parameters");
    if (parameters != nullptr && !parameters->is_null()) {
      out.set_parameters_json(json::Serialize(*parameters));
    }
  }
  return tools;
}

v1::ToolChoice ToolChoiceOf(const std::string& choice) {
  v1::ToolChoice out;
  if (choice.empty() || choice == "auto") {
    out.set_mode(v1::ToolChoice::MODE_AUTO);
  } else if (choice == "none") {
    out.set_mode(v1::ToolChoice::MODE_NONE);
  } else if (choice == "required") {
    out.set_mode(v1::ToolChoice::MODE_REQUIRED);
  } else {
    out.set_mode(v1::ToolChoice::MODE_FUNCTION);
    out.set_function(choice);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RemoteChat>> RemoteChat::Create(const std::string& address,
                                                               const ChatOptions& options,
                                                               const RemoteChatOptions& remote) {
  std::unique_ptr<RemoteChat> chat(new RemoteChat());
  chat->options_ = options;
  chat->remote_ = remote;
  ASSIGN_OR_RETURN(chat->tools_, ParseTools(remote.tools_json));
  chat->tool_choice_ = ToolChoiceOf(remote.tool_choice);
  chat->address_ = address;
  chat->stub_ = v1::Generator::NewStub(grpc::CreateChannel(
      address,
      remote.credentials != nullptr ? remote.credentials : grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  chat->Prepare(context, remote.connect_timeout);
  v1::DescribeModelResponse model;
  const grpc::Status status =
      chat->stub_->DescribeModel(&context, v1::DescribeModelRequest(), &model);
  if (!status.ok()) {
    return ConnectError({address, remote.credentials != nullptr, !remote.api_key.empty(),
                         remote.connect_timeout},
                        status);
  }
  chat->speculative_ = model.has_draft();
  chat->NewSessionId();
  return chat;
}

RemoteChat::~RemoteChat() {
  if (!conversation_.empty()) Reset();  // frees the session's caches on the workers
}

void RemoteChat::Prepare(grpc::ClientContext& context, absl::Duration timeout) const {
  context.set_deadline(Deadline(timeout));
  if (!remote_.api_key.empty()) context.AddMetadata("authorization", "Bearer " + remote_.api_key);
}

void RemoteChat::NewSessionId() {
  std::random_device random;
  session_id_ = absl::StrCat("tandem-chat-", random(), random());
}

void RemoteChat::Reset() {
  grpc::ClientContext context;
  Prepare(context, absl::Seconds(5));
  v1::CloseSessionRequest request;
  request.set_session_id(session_id_);
  v1::CloseSessionResponse response;
  stub_->CloseSession(&context, request, &response);  // NOT_FOUND is fine: nothing to free
  conversation_.clear();
  NewSessionId();
}

v1::GenerateRequest RemoteChat::Request(absl::string_view user_text) const {
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
  for (const v1::Tool& tool : tools_) *chat->add_tools() = tool;
  if (!tools_.empty()) *request.mutable_tool_choice() = tool_choice_;
  if (!remote_.prediction.empty()) request.mutable_prediction()->set_text(remote_.prediction);
  // Every field, so the coordinator samples exactly as the in-process engine would.
  SamplerConfigToProto(options_.sampler, request.mutable_sampling());
  request.set_max_tokens(static_cast<int32_t>(options_.max_tokens));
  request.set_ignore_eos(options_.ignore_eos);
  request.mutable_speculation()->set_draft_tokens(options_.draft_tokens);
  request.mutable_speculation()->set_adaptive(options_.adaptive_draft);
  request.mutable_speculation()->set_pipelined(options_.pipelined);
  request.mutable_speculation()->set_coupling(CouplingToProto(options_.sampler.coupling));
  ConstraintToProto(options_.constraint, request.mutable_constraint());
  if (options_.constraint.empty()) request.clear_constraint();
  request.set_session_id(session_id_);
  return request;
}

absl::StatusOr<TurnResult> RemoteChat::Turn(absl::string_view user_text,
                                            const std::function<void(absl::string_view)>& on_text) {
  grpc::ClientContext context;
  Prepare(context, remote_.turn_timeout);
  std::unique_ptr<grpc::ClientReader<v1::GenerateResponse>> reader =
      stub_->Generate(&context, Request(user_text));
  TurnResult turn;
  bool final_seen = false;
  bool reasoning = false;  // reasoning is being printed
  v1::GenerateResponse response;
  while (reader->Read(&response)) {
    if (response.has_delta()) {
      const v1::TokenDelta& d = response.delta();
      if (!d.reasoning_text().empty()) {
        if (!reasoning) on_text("[reasoning] ");
        reasoning = true;
        on_text(d.reasoning_text());
      }
      if (reasoning && !d.text().empty()) {
        on_text("\n");
        reasoning = false;
      }
      turn.reply += d.text();
      if (!d.text().empty()) on_text(d.text());
    } else if (response.has_final()) {
      turn.generation = FromFinal(response.final());
      for (const v1::ToolCall& call : response.final().tool_calls()) {
        on_text(absl::StrCat(turn.reply.empty() ? "" : "\n", "[tool call ", call.id(), "] ",
                             call.name(), "(", call.arguments(), ")"));
      }
      final_seen = true;
    }
  }
  bool cancelled = false;
  const grpc::Status status = FinishOrCancel(*reader, context, &cancelled);
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return absl::DeadlineExceededError(absl::StrCat("no complete reply from coordinator ", address_,
                                                    " within --timeout ",
                                                    absl::FormatDuration(remote_.turn_timeout)));
  }
  if (cancelled || (status.ok() && !final_seen)) {
    return absl::DataLossError(absl::StrCat(
        "the reply stream from coordinator ", address_, " broke off without its final message (",
        cancelled ? "a message could not be read; the call was cancelled" : "the stream ended",
        ")"));
  }
  if (!status.ok()) {
    return absl::Status(FromGrpcStatus(status).code(),
                        absl::StrCat("coordinator ", address_, ": ", status.error_message()));
  }
  conversation_.emplace_back("user", std::string(user_text));
  conversation_.emplace_back("assistant", turn.reply);
  return turn;
}

}  // namespace tandem
