#include "services/coordinator/request_limits.h"

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"

namespace tandem {
namespace {

// Messages give sizes, never the offending value: it may be megabytes long.
absl::Status TooLong(absl::string_view field, size_t size, int64_t limit, absl::string_view unit) {
  return absl::InvalidArgumentError(
      absl::StrCat(field, " is ", size, " ", unit, "; the limit is ", limit));
}

// The tools: how many, and their names, descriptions and schemas together (the schemas
// become a constraint: the same bound as a constraint's text).
absl::Status CheckTools(const v1::ChatConversation& chat, const RequestLimits& limits) {
  if (chat.tools_size() > limits.max_tools) {
    return TooLong("chat.tools", chat.tools_size(), limits.max_tools, "tools");
  }
  size_t bytes = 0;
  for (const v1::Tool& tool : chat.tools()) {
    bytes += tool.name().size() + tool.description().size() + tool.parameters_json().size();
  }
  if (static_cast<int64_t>(bytes) > limits.max_constraint_bytes) {
    return TooLong("chat.tools (names, descriptions and parameters together)", bytes,
                   limits.max_constraint_bytes, "bytes");
  }
  return absl::OkStatus();
}

absl::Status CheckChat(const v1::ChatConversation& chat, const RequestLimits& limits) {
  if (chat.messages_size() > limits.max_chat_messages) {
    return TooLong("chat.messages", chat.messages_size(), limits.max_chat_messages, "messages");
  }
  if (static_cast<int64_t>(chat.format().size()) > limits.max_format_bytes) {
    return TooLong("chat.format", chat.format().size(), limits.max_format_bytes, "bytes");
  }
  size_t bytes = chat.template_kwargs_json().size();
  size_t calls = 0;
  for (const v1::ChatMessage& m : chat.messages()) {
    bytes += m.role().size() + m.content().size() + m.name().size() + m.tool_call_id().size();
    for (const v1::ToolCall& call : m.tool_calls()) {
      bytes += call.id().size() + call.name().size() + call.arguments().size();
    }
    calls += m.tool_calls_size();
  }
  if (static_cast<int64_t>(bytes) > limits.max_prompt_bytes) {
    return TooLong(
        "chat.messages (role, content, name and tool calls) and template_kwargs_json together",
        bytes, limits.max_prompt_bytes, "bytes");
  }
  if (static_cast<int64_t>(calls) > limits.max_chat_messages) {
    return TooLong("chat.messages' tool_calls", calls, limits.max_chat_messages, "calls");
  }
  return CheckTools(chat, limits);
}

absl::Status CheckText(const std::string& text, const RequestLimits& limits) {
  if (static_cast<int64_t>(text.size()) > limits.max_prompt_bytes) {
    return TooLong("text", text.size(), limits.max_prompt_bytes, "bytes");
  }
  return absl::OkStatus();
}

absl::Status CheckPrediction(const v1::Prediction& prediction, const RequestLimits& limits) {
  if (static_cast<int64_t>(prediction.text().size()) > limits.max_prompt_bytes) {
    return TooLong("prediction.text", prediction.text().size(), limits.max_prompt_bytes, "bytes");
  }
  if (prediction.token_ids().ids_size() > limits.max_prediction_tokens) {
    return TooLong("prediction.token_ids", prediction.token_ids().ids_size(),
                   limits.max_prediction_tokens, "ids");
  }
  return absl::OkStatus();
}

absl::Status CheckStops(const v1::GenerateRequest& request, const RequestLimits& limits) {
  if (request.stop_strings_size() > limits.max_stop_strings) {
    return TooLong("stop_strings", request.stop_strings_size(), limits.max_stop_strings, "strings");
  }
  for (int i = 0; i < request.stop_strings_size(); ++i) {
    const std::string& stop = request.stop_strings(i);
    if (stop.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("stop_strings[", i, "] is empty"));
    }
    if (static_cast<int64_t>(stop.size()) > limits.max_stop_string_bytes) {
      return TooLong(absl::StrCat("stop_strings[", i, "]"), stop.size(),
                     limits.max_stop_string_bytes, "bytes");
    }
  }
  if (request.stop_token_ids_size() > limits.max_stop_token_ids) {
    return TooLong("stop_token_ids", request.stop_token_ids_size(), limits.max_stop_token_ids,
                   "ids");
  }
  return absl::OkStatus();
}

// The field that holds the text, by name, and the text.
absl::Status CheckConstraint(const v1::Constraint& constraint, const RequestLimits& limits) {
  const char* field = nullptr;
  const std::string* text = nullptr;
  switch (constraint.kind_case()) {
    case v1::Constraint::kJsonSchema:
      field = "constraint.json_schema.schema";
      text = &constraint.json_schema().schema();
      break;
    case v1::Constraint::kGrammar:
      field = "constraint.grammar";
      text = &constraint.grammar();
      break;
    case v1::Constraint::kRegex:
      field = "constraint.regex";
      text = &constraint.regex();
      break;
    default:
      return absl::OkStatus();
  }
  if (static_cast<int64_t>(text->size()) > limits.max_constraint_bytes) {
    return TooLong(field, text->size(), limits.max_constraint_bytes, "bytes");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckSessionIdLimit(const std::string& session_id, const RequestLimits& limits) {
  if (static_cast<int64_t>(session_id.size()) > limits.max_session_id_bytes) {
    return TooLong("session_id", session_id.size(), limits.max_session_id_bytes, "bytes");
  }
  return absl::OkStatus();
}

absl::Status CheckGenerateLimits(const v1::GenerateRequest& request, const RequestLimits& limits) {
  RETURN_IF_ERROR(CheckSessionIdLimit(request.session_id(), limits));
  switch (request.prompt_case()) {
    case v1::GenerateRequest::kText:
      RETURN_IF_ERROR(CheckText(request.text(), limits));
      break;
    case v1::GenerateRequest::kChat:
      RETURN_IF_ERROR(CheckChat(request.chat(), limits));
      break;
    case v1::GenerateRequest::kTokenIds: {
      const int n = request.token_ids().ids_size();
      if (limits.max_prompt_tokens > 0 && n > limits.max_prompt_tokens) {
        return absl::OutOfRangeError(absl::StrCat(
            "prompt of ", n, " token ids exceeds the context of ", limits.max_prompt_tokens));
      }
      break;
    }
    default:
      break;  // "set one of text, chat or token_ids" comes later, with the other checks
  }
  RETURN_IF_ERROR(CheckStops(request, limits));
  RETURN_IF_ERROR(CheckPrediction(request.prediction(), limits));
  // --- #30 sampling ---
  if (request.sampling().logit_bias_size() > limits.max_logit_bias) {
    return TooLong("sampling.logit_bias", request.sampling().logit_bias_size(),
                   limits.max_logit_bias, "entries");
  }
  // --- end ---
  return CheckConstraint(request.constraint(), limits);
}

absl::Status CheckTokenizeLimits(const v1::TokenizeRequest& request, const RequestLimits& limits) {
  switch (request.input_case()) {
    case v1::TokenizeRequest::kText:
      return CheckText(request.text(), limits);
    case v1::TokenizeRequest::kChat:
      return CheckChat(request.chat(), limits);
    default:
      return absl::OkStatus();
  }
}

// --- #30 embeddings ---
absl::Status CheckEmbedLimits(const v1::EmbedRequest& request, const RequestLimits& limits) {
  if (request.inputs_size() > limits.max_embed_inputs) {
    return TooLong("inputs", request.inputs_size(), limits.max_embed_inputs, "inputs");
  }
  int64_t ids = 0;
  for (int i = 0; i < request.inputs_size(); ++i) {
    const v1::EmbedInput& input = request.inputs(i);
    if (static_cast<int64_t>(input.text().size()) > limits.max_prompt_bytes) {
      return TooLong(absl::StrCat("inputs[", i, "].text"), input.text().size(),
                     limits.max_prompt_bytes, "bytes");
    }
    ids += input.token_ids().ids_size();
    if (ids > limits.max_embed_tokens) {
      return absl::InvalidArgumentError(absl::StrCat("inputs[", i, "] brings the token ids to ",
                                                     ids, "; the limit is ",
                                                     limits.max_embed_tokens, " in all"));
    }
  }
  return absl::OkStatus();
}
// --- end ---

}  // namespace tandem
