#include "services/coordinator/openai_request.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
#include "core/generation/token_logprobs.h"
#include "services/coordinator/openai_constraint.h"
#include "services/coordinator/openai_fields.h"
#include "services/coordinator/openai_sampling.h"
#include "services/coordinator/openai_tools.h"

namespace tandem {
namespace {

using json::Value;

constexpr int kMaxDepth = 64;
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt32Min = std::numeric_limits<int32_t>::min();

using openai::Bool;
using openai::Float;
using openai::Int;
using openai::Invalid;
using openai::Number;
using openai::String;
using openai::Unsupported;
using openai::WrongType;

absl::Status TokenIds(absl::string_view field, const json::Array& ids, v1::TokenIds* out) {
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSIGN_OR_RETURN(int64_t id,
                     Int(absl::StrCat(field, "[", i, "]"), ids[i], kInt32Min, kInt32Max));
    out->add_ids(static_cast<int32_t>(id));
  }
  return absl::OkStatus();
}

// prompt: "text", [ids...], ["text"] or [[ids...]]; a batch of several is refused.
absl::Status Prompt(const Value& v, OpenAiRequest& r) {
  if (v.is_string()) {
    r.generate.set_text(v.as_string());
    return absl::OkStatus();
  }
  if (!v.is_array()) return WrongType("prompt", "a string or an array", v);
  const json::Array& a = v.as_array();
  if (a.empty()) return Invalid("prompt", "is empty");
  if (a[0].is_int()) return TokenIds("prompt", a, r.generate.mutable_token_ids());
  if (a.size() > 1) {
    return Unsupported("prompt", absl::StrCat("a batch of ", a.size(), " prompts"),
                       "; send one per request");
  }
  if (a[0].is_string()) {
    r.generate.set_text(a[0].as_string());
    return absl::OkStatus();
  }
  if (a[0].is_array())
    return TokenIds("prompt[0]", a[0].as_array(), r.generate.mutable_token_ids());
  return WrongType("prompt[0]", "a string, an integer or an array of integers", a[0]);
}

// A message's content: a string, or an array of {"type": "text", "text": ...} parts joined.
absl::StatusOr<std::string> Content(const std::string& field, const Value& v) {
  if (v.is_null()) return std::string();  // an assistant turn that only called tools
  if (v.is_string()) return v.as_string();
  if (!v.is_array()) return WrongType(field, "a string or an array of text parts", v);
  std::string text;
  for (size_t i = 0; i < v.as_array().size(); ++i) {
    const std::string part_field = absl::StrCat(field, "[", i, "]");
    const Value& part = v.as_array()[i];
    if (!part.is_object()) return WrongType(part_field, "an object", part);
    const Value* type = part.as_object().Find("type");
    if (type == nullptr) return Invalid(part_field, "has no type");
    ASSIGN_OR_RETURN(std::string t, String(part_field + ".type", *type));
    if (t != "text")
      return Unsupported(part_field, absl::StrCat(part_field, " of type '", t, "'"),
                         " (text only)");
    const Value* part_text = part.as_object().Find("text");
    if (part_text == nullptr) return Invalid(part_field, "has no text");
    ASSIGN_OR_RETURN(std::string s, String(part_field + ".text", *part_text));
    text += s;
  }
  return text;
}

// Predicted Outputs: {"type": "content", "content": a string or text parts}.
absl::Status Prediction(const Value& v, OpenAiRequest& r) {
  if (!v.is_object()) return WrongType("prediction", "an object", v);
  const Value* type = v.as_object().Find("type");
  if (type == nullptr) return Invalid("prediction", "has no type");
  ASSIGN_OR_RETURN(std::string t, String("prediction.type", *type));
  if (t != "content") {
    return Unsupported("prediction.type", absl::StrCat("prediction of type '", t, "'"),
                       " (only 'content')");
  }
  for (const auto& [key, value] : v.as_object()) {
    if (key != "type" && key != "content") {
      return Unsupported("prediction", absl::StrCat("field 'prediction.", key, "'"), "");
    }
  }
  const Value* content = v.as_object().Find("content");
  if (content == nullptr || content->is_null()) return Invalid("prediction", "has no content");
  ASSIGN_OR_RETURN(*r.generate.mutable_prediction()->mutable_text(),
                   Content("prediction.content", *content));
  return absl::OkStatus();
}

// What SDKs send back in an assistant turn they received, with no meaning in a prompt: a
// refusal (null), audio (null) and annotations (empty).
bool IgnoredMessageField(const std::string& key, const Value& v) {
  if (key == "annotations") return v.is_array() && v.as_array().empty();
  return false;
}

absl::Status Message(size_t index, const Value& v, v1::ChatMessage* out) {
  const std::string field = absl::StrCat("messages[", index, "]");
  if (!v.is_object()) return WrongType(field, "an object", v);
  bool has_content = false;
  for (const auto& [key, value] : v.as_object()) {
    const std::string f = absl::StrCat(field, ".", key);
    if (key == "role") {
      ASSIGN_OR_RETURN(*out->mutable_role(), String(f, value));
    } else if (key == "content") {
      ASSIGN_OR_RETURN(*out->mutable_content(), Content(f, value));
      has_content = true;
    } else if (key == "name") {
      if (value.is_null()) continue;
      ASSIGN_OR_RETURN(*out->mutable_name(), String(f, value));
    } else if (key == "tool_calls") {
      if (value.is_null()) continue;
      RETURN_IF_ERROR(openai::MessageToolCalls(f, value, out));
    } else if (key == "tool_call_id") {
      if (value.is_null()) continue;
      ASSIGN_OR_RETURN(*out->mutable_tool_call_id(), String(f, value));
    } else if (IgnoredMessageField(key, value)) {
      continue;
    } else if (!value.is_null()) {
      return Unsupported(f, f, "");
    }
  }
  if (out->role().empty()) return Invalid(field, "has no role");
  if (!has_content && out->tool_calls_size() == 0) return Invalid(field, "has no content");
  return absl::OkStatus();
}

absl::Status Messages(const Value& v, OpenAiRequest& r) {
  if (!v.is_array()) return WrongType("messages", "an array", v);
  if (v.as_array().empty()) return Invalid("messages", "is empty");
  v1::ChatConversation* chat = r.generate.mutable_chat();
  chat->set_add_generation_prompt(true);
  for (size_t i = 0; i < v.as_array().size(); ++i) {
    RETURN_IF_ERROR(Message(i, v.as_array()[i], chat->add_messages()));
  }
  return absl::OkStatus();
}

absl::Status Stop(const Value& v, OpenAiRequest& r) {
  if (v.is_string()) {
    if (v.as_string().empty()) return Invalid("stop", "is empty");
    r.generate.add_stop_strings(v.as_string());
    return absl::OkStatus();
  }
  if (!v.is_array()) return WrongType("stop", "a string or an array of strings", v);
  for (size_t i = 0; i < v.as_array().size(); ++i) {
    const std::string field = absl::StrCat("stop[", i, "]");
    ASSIGN_OR_RETURN(std::string s, String(field, v.as_array()[i]));
    if (s.empty()) return Invalid(field, "is empty");
    r.generate.add_stop_strings(std::move(s));
  }
  return absl::OkStatus();
}

absl::Status Speculation(const Value& v, OpenAiRequest& r) {
  if (!v.is_object()) return WrongType("speculation", "an object", v);
  v1::Speculation* s = r.generate.mutable_speculation();
  for (const auto& [key, value] : v.as_object()) {
    const std::string f = "speculation." + key;
    if (value.is_null()) continue;
    if (key == "enabled") {
      ASSIGN_OR_RETURN(bool b, Bool(f, value));
      s->set_enabled(b);
    } else if (key == "draft_tokens") {
      ASSIGN_OR_RETURN(int64_t k, Int(f, value, kInt32Min, kInt32Max));
      s->set_draft_tokens(static_cast<int32_t>(k));
    } else if (key == "adaptive") {
      ASSIGN_OR_RETURN(bool b, Bool(f, value));
      s->set_adaptive(b);
    } else if (key == "method") {
      ASSIGN_OR_RETURN(std::string m, String(f, value));
      if (m == "draft_model") {
        s->set_method(v1::SPECULATION_METHOD_DRAFT_MODEL);
      } else if (m == "ngram") {
        s->set_method(v1::SPECULATION_METHOD_NGRAM);
      } else {
        return Invalid(f, "is not 'draft_model' or 'ngram'");
      }
    } else if (key == "pipelined") {
      ASSIGN_OR_RETURN(bool b, Bool(f, value));
      s->set_pipelined(b);
    } else if (key == "coupling") {
      ASSIGN_OR_RETURN(std::string c, String(f, value));
      if (c == "standard") {
        s->set_coupling(v1::COUPLING_STANDARD);
      } else if (c == "gumbel") {
        s->set_coupling(v1::COUPLING_GUMBEL);
      } else {
        return Invalid(f, "is not 'standard' or 'gumbel'");
      }
    } else {
      return Invalid(f,
                     "unknown field (speculation takes enabled, draft_tokens, adaptive, method, "
                     "coupling, pipelined)");
    }
  }
  return absl::OkStatus();
}

absl::Status StreamOptions(const Value& v, OpenAiRequest& r) {
  if (!v.is_object()) return WrongType("stream_options", "an object", v);
  for (const auto& [key, value] : v.as_object()) {
    if (value.is_null()) continue;
    if (key != "include_usage") {
      return Unsupported("stream_options." + key, "stream_options." + key, "");
    }
    ASSIGN_OR_RETURN(r.include_usage, Bool("stream_options.include_usage", value));
  }
  return absl::OkStatus();
}

absl::Status MaxTokens(absl::string_view field, const Value& v, OpenAiRequest& r) {
  ASSIGN_OR_RETURN(int64_t n, Int(field, v, 1, kInt32Max));
  if (r.generate.max_tokens() != 0 && r.generate.max_tokens() != n) {
    return Invalid(field, "differs from the other of max_tokens and max_completion_tokens");
  }
  r.generate.set_max_tokens(static_cast<int32_t>(n));
  return absl::OkStatus();
}

// A sampling field; kNotFound when `key` is none.
absl::Status SamplingField(const std::string& key, const Value& v, v1::SamplingParams* s) {
  if (key == "temperature" || key == "top_p" || key == "min_p" || key == "repetition_penalty") {
    ASSIGN_OR_RETURN(float f, Float(key, v));
    if (key == "temperature") s->set_temperature(f);
    if (key == "top_p") s->set_top_p(f);
    if (key == "min_p") s->set_min_p(f);
    if (key == "repetition_penalty") s->set_repetition_penalty(f);
    return absl::OkStatus();
  }
  if (key == "top_k") {
    ASSIGN_OR_RETURN(int64_t k, Int(key, v, kInt32Min, kInt32Max));
    s->set_top_k(static_cast<int32_t>(k));
    return absl::OkStatus();
  }
  if (key == "seed") {
    ASSIGN_OR_RETURN(int64_t seed, Int(key, v, 0, std::numeric_limits<int64_t>::max()));
    s->set_seed(static_cast<uint64_t>(seed));
    return absl::OkStatus();
  }
  // --- #30 sampling ---
  if (key == "logit_bias" || key == "presence_penalty" || key == "frequency_penalty") {
    return openai::OpenAiSamplingField(key, v, s);
  }
  // --- end ---
  return absl::NotFoundError(key);
}

// chat: logprobs (bool) and top_logprobs (0..20); completions: logprobs (0..20, the
// alternatives per token: any value asks for the chosen tokens' logprobs). kNotFound for
// another key.
absl::Status LogprobsField(const std::string& key, const Value& v, bool chat, OpenAiRequest& r) {
  if (key == "logprobs" && chat) {
    ASSIGN_OR_RETURN(bool b, Bool(key, v));
    r.generate.set_logprobs(b);
    return absl::OkStatus();
  }
  if ((key == "top_logprobs" && chat) || (key == "logprobs" && !chat)) {
    ASSIGN_OR_RETURN(int64_t n, Int(key, v, 0, kMaxTopLogprobs));
    r.generate.set_top_logprobs(static_cast<int32_t>(n));
    if (!chat) r.generate.set_logprobs(true);
    return absl::OkStatus();
  }
  return absl::NotFoundError(key);
}

// Fields SDKs and agent frameworks send that change nothing in the output here: stored
// completions and their metadata, the service tier, the end user's id, the reasoning effort
// (the models served here have no effort setting).
bool IgnoredField(const std::string& key) {
  return key == "user" || key == "store" || key == "metadata" || key == "service_tier" ||
         key == "reasoning_effort";
}

// One top-level field; `chat` tells which endpoint's own fields apply. kNotFound when `key`
// is none of them.
absl::Status Field(const std::string& key, const Value& v, bool chat, OpenAiRequest& r) {
  if (key == "model") {
    ASSIGN_OR_RETURN(r.model, String(key, v));
    return absl::OkStatus();
  }
  if (key == "messages" && chat) return Messages(v, r);
  if (key == "prompt" && !chat) return Prompt(v, r);
  if (key == "max_tokens") return MaxTokens(key, v, r);
  if (key == "max_completion_tokens" && chat) return MaxTokens(key, v, r);
  // --- #30 n choices --- (its upper bound is the coordinator's --max-choices)
  if (key == "n") {
    ASSIGN_OR_RETURN(int64_t n, Int(key, v, 1, kInt32Max));
    r.generate.set_n(static_cast<int32_t>(n));
    return absl::OkStatus();
  }
  // --- end ---
  if (key == "stream") {
    ASSIGN_OR_RETURN(r.stream, Bool(key, v));
    return absl::OkStatus();
  }
  if (key == "stream_options") return StreamOptions(v, r);
  if (key == "chat_template_kwargs" && chat) {
    if (!v.is_object()) return WrongType(key, "an object", v);
    r.generate.mutable_chat()->set_template_kwargs_json(json::Serialize(v));
    return absl::OkStatus();
  }
  if (key == "stop") return Stop(v, r);
  if (key == "prediction") return Prediction(v, r);
  if (key == "speculation") return Speculation(v, r);
  if (key == "session_id") {
    ASSIGN_OR_RETURN(*r.generate.mutable_session_id(), String(key, v));
    return absl::OkStatus();
  }
  if (key == "ignore_eos") {
    ASSIGN_OR_RETURN(bool b, Bool(key, v));
    r.generate.set_ignore_eos(b);
    return absl::OkStatus();
  }
  if (IgnoredField(key)) return absl::OkStatus();
  if (chat && openai::IsToolField(key)) return openai::ToolField(key, v, &r.generate);
  return LogprobsField(key, v, chat, r);
}

// The fields accepted only at their neutral value, and everything else.
absl::Status RefusedField(const std::string& key, const Value& v, bool chat) {
  if (key == "best_of" && !chat) {
    ASSIGN_OR_RETURN(int64_t n, Int(key, v, std::numeric_limits<int64_t>::min(),
                                    std::numeric_limits<int64_t>::max()));
    if (n != 1) {
      return Unsupported(key, absl::StrCat(key, " = ", n),
                         " (ask for several choices with n and rank them yourself)");
    }
    return absl::OkStatus();
  }
  if (key == "echo" && !chat) {
    ASSIGN_OR_RETURN(bool b, Bool(key, v));
    if (b) return Unsupported("echo", "echo", "");
    return absl::OkStatus();
  }
  return Unsupported(key, absl::StrCat("field '", key, "'"), "");
}

}  // namespace

absl::StatusOr<OpenAiRequest> ParseOpenAiRequest(absl::string_view body, OpenAiEndpoint endpoint) {
  json::ParseOptions options;
  options.max_depth = kMaxDepth;
  absl::StatusOr<Value> parsed = json::Parse(body, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the body is not JSON: ", parsed.status().message()));
  }
  if (!parsed->is_object()) return WrongType("the body", "a JSON object", *parsed);
  OpenAiRequest r;
  r.endpoint = endpoint;
  const bool chat = endpoint == OpenAiEndpoint::kChatCompletions;
  OpenAiConstraintParser constraint(r.generate.mutable_constraint());
  for (const auto& [key, value] : parsed->as_object()) {
    if (value.is_null()) continue;  // null means unset, as OpenAI's API takes it
    if (OpenAiConstraintParser::IsConstraintField(key)) {
      RETURN_IF_ERROR(constraint.Field(key, value));
      continue;
    }
    absl::Status status = Field(key, value, chat, r);
    if (absl::IsNotFound(status)) {
      v1::SamplingParams sampling = r.generate.sampling();
      status = SamplingField(key, value, &sampling);
      if (status.ok()) *r.generate.mutable_sampling() = std::move(sampling);
    }
    if (absl::IsNotFound(status)) status = RefusedField(key, value, chat);
    RETURN_IF_ERROR(status);
  }
  if (r.model.empty()) return Invalid("model", "is required");
  if (r.generate.prompt_case() == v1::GenerateRequest::PROMPT_NOT_SET ||
      (chat && r.generate.chat().messages_size() == 0)) {
    return Invalid(chat ? "messages" : "prompt", "is required");
  }
  if (r.include_usage && !r.stream) return Invalid("stream_options", "is only allowed with stream");
  if (r.generate.constraint().kind_case() == v1::Constraint::KIND_NOT_SET) {
    r.generate.clear_constraint();  // {"type": "text"}: none, as when unset
  }
  if (chat && r.generate.top_logprobs() > 0 && !r.generate.logprobs()) {
    return Invalid("top_logprobs", "needs logprobs: true");
  }
  return r;
}

}  // namespace tandem
