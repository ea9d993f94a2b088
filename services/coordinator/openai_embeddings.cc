#include "services/coordinator/openai_embeddings.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
#include "services/coordinator/openai_fields.h"

namespace tandem {
namespace {

using json::Value;
using openai::Invalid;
using openai::WrongType;

constexpr int kMaxDepth = 8;  // {"input": [[ids]]} needs 3

absl::StatusOr<int32_t> TokenId(const std::string& field, const Value& v) {
  ASSIGN_OR_RETURN(int64_t id, openai::Int(field, v, 0, std::numeric_limits<int32_t>::max()));
  return static_cast<int32_t>(id);
}

absl::Status AddText(const std::string& field, const Value& v, v1::EmbedRequest* embed) {
  ASSIGN_OR_RETURN(std::string text, openai::String(field, v));
  if (text.empty()) return Invalid(field, "is an empty string");
  embed->add_inputs()->set_text(std::move(text));
  return absl::OkStatus();
}

absl::Status AddIds(const std::string& field, const json::Array& ids, v1::EmbedRequest* embed) {
  if (ids.empty()) return Invalid(field, "is an empty array of token ids");
  v1::TokenIds* out = embed->add_inputs()->mutable_token_ids();
  for (size_t j = 0; j < ids.size(); ++j) {
    ASSIGN_OR_RETURN(int32_t id, TokenId(absl::StrCat(field, "[", j, "]"), ids[j]));
    out->add_ids(id);
  }
  return absl::OkStatus();
}

// `input`: a string, strings, token ids, or arrays of token ids.
absl::Status Input(const Value& v, v1::EmbedRequest* embed) {
  if (v.is_string()) return AddText("input", v, embed);
  if (!v.is_array()) {
    return WrongType("input", "a string, an array of strings or an array of token ids", v);
  }
  const json::Array& items = v.as_array();
  if (items.empty()) return Invalid("input", "is an empty array");
  if (items[0].is_number()) return AddIds("input", items, embed);  // one input of ids
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string field = absl::StrCat("input[", i, "]");
    if (items[0].is_string()) {
      RETURN_IF_ERROR(AddText(field, items[i], embed));
    } else if (items[0].is_array() && items[i].is_array()) {
      RETURN_IF_ERROR(AddIds(field, items[i].as_array(), embed));
    } else {
      return WrongType(field, items[0].is_array() ? "an array of token ids" : "a string",
                       items[i]);
    }
  }
  return absl::OkStatus();
}

absl::Status Field(const std::string& key, const Value& v, EmbeddingsRequest& r) {
  if (key == "input") return Input(v, &r.embed);
  if (key == "model") {
    ASSIGN_OR_RETURN(r.model, openai::String(key, v));
    return absl::OkStatus();
  }
  if (key == "encoding_format") {
    ASSIGN_OR_RETURN(std::string format, openai::String(key, v));
    if (format != "float" && format != "base64") {
      return Invalid(key, absl::StrCat("\"", format, "\" is not \"float\" or \"base64\""));
    }
    r.base64 = format == "base64";
    return absl::OkStatus();
  }
  if (key == "dimensions") {
    ASSIGN_OR_RETURN(r.dimensions, openai::Int(key, v, 1, std::numeric_limits<int32_t>::max()));
    return absl::OkStatus();
  }
  if (key == "user") return openai::String(key, v).status();  // accepted, ignored
  if (key == "pooling") {
    ASSIGN_OR_RETURN(std::string pooling, openai::String(key, v));
    if (pooling == "mean") {
      r.embed.set_pooling(v1::EMBED_POOLING_MEAN);
    } else if (pooling == "last") {
      r.embed.set_pooling(v1::EMBED_POOLING_LAST);
    } else {
      return Invalid(key, absl::StrCat("\"", pooling, "\" is not \"mean\" or \"last\""));
    }
    return absl::OkStatus();
  }
  return openai::Unsupported(key, absl::StrCat("field '", key, "'"), "");
}

// The float32 values as little-endian bytes, base64.
std::string Base64Floats(const google::protobuf::RepeatedField<float>& values) {
  std::string bytes;
  bytes.reserve(values.size() * 4);
  for (float f : values) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof(bits));
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<char>((bits >> (8 * b)) & 0xff));
  }
  return absl::Base64Escape(bytes);
}

}  // namespace

absl::StatusOr<EmbeddingsRequest> ParseEmbeddingsRequest(absl::string_view body) {
  json::ParseOptions options;
  options.max_depth = kMaxDepth;
  absl::StatusOr<Value> parsed = json::Parse(body, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the body is not JSON: ", parsed.status().message()));
  }
  if (!parsed->is_object()) return WrongType("the body", "a JSON object", *parsed);
  EmbeddingsRequest r;
  bool has_input = false;
  for (const auto& [key, value] : parsed->as_object()) {
    if (value.is_null()) continue;  // null means unset
    has_input = has_input || key == "input";
    RETURN_IF_ERROR(Field(key, value, r));
  }
  if (r.model.empty()) return Invalid("model", "is required");
  if (!has_input) return Invalid("input", "is required");
  return r;
}

absl::StatusOr<std::string> EmbeddingsResponseJson(const EmbeddingsRequest& request,
                                                   const v1::EmbedResponse& response) {
  json::Array data;
  for (const v1::Embedding& e : response.embeddings()) {
    if (request.dimensions.has_value() && *request.dimensions != e.values_size()) {
      return Invalid("dimensions", absl::StrCat(*request.dimensions, " is not the model's ",
                                                e.values_size(), "; only ", e.values_size(),
                                                " is served"));
    }
    Value embedding;
    if (request.base64) {
      embedding = Base64Floats(e.values());
    } else {
      json::Array values;
      values.reserve(e.values_size());
      for (float f : e.values()) values.emplace_back(static_cast<double>(f));
      embedding = std::move(values);
    }
    data.push_back(json::Object{
        {"object", "embedding"}, {"index", e.index()}, {"embedding", std::move(embedding)}});
  }
  const int64_t tokens = response.prompt_tokens();
  return json::Serialize(json::Object{
      {"object", "list"},
      {"data", std::move(data)},
      {"model", response.model()},
      {"usage", json::Object{{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
}

EmbeddingsOutcome ServeEmbeddings(
    absl::string_view body, const std::string& model, const RequestLimits& limits,
    const std::function<absl::StatusOr<v1::EmbedResponse>(const v1::EmbedRequest&)>& embed) {
  return ServeEmbeddings(body, std::vector<std::string>{model}, limits, embed);
}

EmbeddingsOutcome ServeEmbeddings(
    absl::string_view body, const std::vector<std::string>& names, const RequestLimits& limits,
    const std::function<absl::StatusOr<v1::EmbedResponse>(const v1::EmbedRequest&)>& embed) {
  EmbeddingsOutcome out;
  absl::StatusOr<EmbeddingsRequest> request = ParseEmbeddingsRequest(body);
  if (!request.ok()) {
    out.status = request.status();
    return out;
  }
  if (std::find(names.begin(), names.end(), request->model) == names.end()) {
    out.status = absl::NotFoundError(
        absl::StrCat("the model '", request->model, "' does not exist; this server serves '",
                     absl::StrJoin(names, "', '"), "' (GET /v1/models)"));
    return out;
  }
  if (absl::Status checked = CheckEmbedLimits(request->embed, limits); !checked.ok()) {
    out.status = Invalid("input", checked.message());  // error.param: the HTTP field
    out.origin = ErrorOrigin::kRequestLimit;
    return out;
  }
  absl::StatusOr<v1::EmbedResponse> response = embed(request->embed);
  if (!response.ok()) {
    out.status = response.status();
    return out;
  }
  absl::StatusOr<std::string> json_body = EmbeddingsResponseJson(*request, *response);
  if (!json_body.ok()) {
    out.status = json_body.status();
    return out;
  }
  out.body = *std::move(json_body);
  return out;
}

}  // namespace tandem
