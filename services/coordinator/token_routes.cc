#include "services/coordinator/token_routes.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
#include "core/base/utf8.h"
#include "services/coordinator/openai_fields.h"

namespace tandem {
namespace {

constexpr int kMaxDepth = 8;

absl::StatusOr<json::Object> BodyObject(absl::string_view body) {
  json::ParseOptions options;
  options.max_depth = kMaxDepth;
  absl::StatusOr<json::Value> parsed = json::Parse(body, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the body is not JSON: ", parsed.status().message()));
  }
  if (!parsed->is_object()) return openai::WrongType("the body", "a JSON object", *parsed);
  return std::move(parsed->as_object());
}

json::Value Piece(const std::string& bytes) {
  if (utf8::Validate(bytes).ok()) return json::Value(bytes);
  json::Array values;
  for (char c : bytes) values.emplace_back(static_cast<int64_t>(static_cast<uint8_t>(c)));
  return json::Value(std::move(values));
}

}  // namespace

absl::StatusOr<TokenizeBody> ParseTokenizeBody(absl::string_view body) {
  ASSIGN_OR_RETURN(const json::Object object, BodyObject(body));
  TokenizeBody out;
  out.request.set_parse_special(true);  // as llama-server: special-token texts are tokens
  bool has_content = false;
  for (const auto& [key, value] : object) {
    if (key == "content") {
      ASSIGN_OR_RETURN(std::string content, openai::String(key, value));
      out.request.set_text(std::move(content));
      has_content = true;
    } else if (key == "add_special") {
      ASSIGN_OR_RETURN(const bool b, openai::Bool(key, value));
      out.request.set_add_special(b);
    } else if (key == "parse_special") {
      ASSIGN_OR_RETURN(const bool b, openai::Bool(key, value));
      out.request.set_parse_special(b);
    } else if (key == "with_pieces") {
      ASSIGN_OR_RETURN(out.with_pieces, openai::Bool(key, value));
    } else {
      return openai::Invalid(
          key, "unknown field (/tokenize takes content, add_special, parse_special, with_pieces)");
    }
  }
  if (!has_content) return openai::Invalid("content", "is required");
  return out;
}

std::string TokenizeReply(const v1::TokenizeResponse& response, bool with_pieces,
                          const std::vector<std::string>& token_bytes) {
  json::Array tokens;
  for (const int32_t id : response.token_ids()) {
    if (!with_pieces) {
      tokens.emplace_back(static_cast<int64_t>(id));
      continue;
    }
    const bool known = id >= 0 && static_cast<size_t>(id) < token_bytes.size();
    tokens.emplace_back(json::Object{{"id", static_cast<int64_t>(id)},
                                     {"piece", known ? Piece(token_bytes[id]) : json::Value("")}});
  }
  return json::Serialize(json::Object{{"tokens", std::move(tokens)}});
}

absl::StatusOr<v1::DetokenizeRequest> ParseDetokenizeBody(absl::string_view body,
                                                          int32_t vocab_size, size_t max_ids) {
  ASSIGN_OR_RETURN(const json::Object object, BodyObject(body));
  v1::DetokenizeRequest out;
  const json::Value* tokens = nullptr;
  for (const auto& [key, value] : object) {
    if (key != "tokens") return openai::Invalid(key, "unknown field (/detokenize takes tokens)");
    tokens = &value;
  }
  if (tokens == nullptr) return openai::Invalid("tokens", "is required");
  if (!tokens->is_array()) return openai::WrongType("tokens", "an array of integers", *tokens);
  const json::Array& ids = tokens->as_array();
  if (ids.size() > max_ids) {
    return openai::Invalid("tokens", absl::StrCat(ids.size(), " ids; at most ", max_ids,
                                                  " (the target's context)"));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSIGN_OR_RETURN(const int64_t id,
                     openai::Int(absl::StrCat("tokens[", i, "]"), ids[i], 0, vocab_size - 1));
    out.add_token_ids(static_cast<int32_t>(id));
  }
  return out;
}

std::string DetokenizeReply(const v1::DetokenizeResponse& response) {
  return json::Serialize(json::Object{{"content", response.text()}});
}

}  // namespace tandem
