#include "services/coordinator/openai_error_param.h"

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "services/coordinator/openai_fields.h"

namespace tandem {
namespace {

// The gRPC field a message starts with, and the body's field it came from ("" for the
// prompt: messages or prompt by endpoint).
struct FieldName {
  const char* grpc;
  const char* openai;
};
constexpr FieldName kFields[] = {
    {"max_tokens", "max_tokens"},
    {"speculation.draft_tokens", "speculation.draft_tokens"},
    {"speculation.method", "speculation.method"},
    {"speculation.coupling", "speculation.coupling"},
    {"stop_strings", "stop"},
    {"stop_token_ids", "stop"},
    {"top_logprobs", "top_logprobs"},
    {"logprobs", "logprobs"},
    {"session_id", "session_id"},
    {"chat.tools", "tools"},
    {"tools", "tools"},
    {"tool_choice", "tool_choice"},
    {"chat.messages", ""},
    {"chat.format", ""},
    {"chat", ""},
    {"text", ""},
    {"prompt", ""},
    {"the prompt", ""},
    {"constraint", "response_format"},
    {"prediction.text", "prediction.content"},
    {"prediction.token_ids", "prediction.content"},
    {"prediction", "prediction"},
    {"n", "n"},  // #30 n choices (choices.h's CheckChoices)
};

// Whether `message` starts with `field` as a whole word ("chat.tools" not "chat.toolsx").
bool StartsWithField(absl::string_view message, absl::string_view field) {
  if (!absl::ConsumePrefix(&message, field)) return false;
  return message.empty() || message[0] == ' ' || message[0] == ':' || message[0] == '[' ||
         message[0] == '\'' || message[0] == '.';
}

// The field of the body the request's constraint came from.
std::optional<std::string> ConstraintField(const OpenAiRequest& request) {
  switch (request.generate.constraint().kind_case()) {
    case v1::Constraint::kGrammar:
      return "grammar";
    case v1::Constraint::kRegex:
      return "regex";
    case v1::Constraint::kJsonObject:
    case v1::Constraint::kJsonSchema:
      return "response_format";
    default:
      break;
  }
  if (request.generate.chat().tools_size() > 0) return "tools";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> OpenAiParamOf(const absl::Status& status,
                                         const OpenAiRequest& request) {
  if (std::optional<std::string> param = openai::ErrorParam(status)) return param;
  const std::string prompt =
      request.endpoint == OpenAiEndpoint::kChatCompletions ? "messages" : "prompt";
  if (status.code() == absl::StatusCode::kOutOfRange) return prompt;  // over the context
  absl::string_view message = status.message();
  absl::ConsumePrefix(&message, "sampler ");  // the sampler's own checks: "sampler top_p ..."
  for (const FieldName& f : kFields) {
    if (StartsWithField(message, f.grpc)) return *f.openai == '\0' ? prompt : f.openai;
  }
  if (message != status.message()) {  // "sampler NAME must be ...": the body's NAME
    return std::string(message.substr(0, message.find(' ')));
  }
  if (absl::StartsWith(status.message(), "sampling.")) {
    absl::string_view field = status.message();
    field.remove_prefix(9);
    return std::string(field.substr(0, field.find_first_of(" :")));
  }
  return ConstraintField(request);  // a schema, grammar or tool set that does not compile
}

absl::Status WithOpenAiParam(absl::Status status, const OpenAiRequest& request) {
  const bool client = status.code() == absl::StatusCode::kInvalidArgument ||
                      status.code() == absl::StatusCode::kOutOfRange;
  if (!client || openai::ErrorParam(status).has_value()) return status;
  if (std::optional<std::string> param = OpenAiParamOf(status, request)) {
    return openai::WithParam(std::move(status), *param);
  }
  return status;
}

}  // namespace tandem
