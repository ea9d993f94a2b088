#include "services/coordinator/openai_fields.h"

#include <cmath>
#include <limits>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"

namespace tandem::openai {
namespace {

constexpr absl::string_view kParamPayload = "type.tandem.dev/openai-param";

}  // namespace

absl::Status WithParam(absl::Status status, absl::string_view param) {
  status.SetPayload(kParamPayload, absl::Cord(param));
  return status;
}

absl::Status Invalid(absl::string_view field, absl::string_view what) {
  return WithParam(absl::InvalidArgumentError(absl::StrCat(field, ": ", what)), field);
}

absl::Status WrongType(absl::string_view field, absl::string_view expected, const json::Value& v) {
  return Invalid(field, absl::StrCat("expected ", expected, ", got ", json::TypeName(v.type())));
}

absl::Status Unsupported(absl::string_view param, absl::string_view what, absl::string_view why) {
  return WithParam(absl::InvalidArgumentError(absl::StrCat(
                       what, " is not supported by Tandem's OpenAI-compatible API", why)),
                   param);
}

absl::StatusOr<bool> Bool(absl::string_view field, const json::Value& v) {
  if (!v.is_bool()) return WrongType(field, "a boolean", v);
  return v.as_bool();
}

absl::StatusOr<int64_t> Int(absl::string_view field, const json::Value& v, int64_t min,
                            int64_t max) {
  if (!v.is_int()) return WrongType(field, "an integer", v);
  if (v.as_int() < min || v.as_int() > max) {
    return Invalid(field, absl::StrCat(v.as_int(), " is outside [", min, ", ", max, "]"));
  }
  return v.as_int();
}

absl::StatusOr<double> Number(absl::string_view field, const json::Value& v) {
  if (!v.is_number()) return WrongType(field, "a number", v);
  return v.as_double();
}

absl::StatusOr<float> Float(absl::string_view field, const json::Value& v) {
  ASSIGN_OR_RETURN(double d, Number(field, v));
  if (!(std::fabs(d) <= std::numeric_limits<float>::max())) {
    return Invalid(field, absl::StrCat(d, " is outside the range of a float"));
  }
  return static_cast<float>(d);
}

absl::StatusOr<std::string> String(absl::string_view field, const json::Value& v) {
  if (!v.is_string()) return WrongType(field, "a string", v);
  return v.as_string();
}

std::optional<std::string> ErrorParam(const absl::Status& status) {
  absl::optional<absl::Cord> param = status.GetPayload(kParamPayload);
  if (!param.has_value()) return std::nullopt;
  return std::string(*param);
}

}  // namespace tandem::openai
