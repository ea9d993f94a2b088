// Reading the fields of an OpenAI-style request body: typed readers that refuse a wrong type
// or range with kInvalidArgument naming the field ("field: expected a string, got number"),
// and the field an error is about, carried as a payload on the status so the HTTP error body
// can name it (OpenAI's `error.param`). openai_request.h, openai_constraint.h and
// openai_tools.h read their fields with these.
//
// Thread-safe (no state).
#ifndef TANDEM_SERVICES_COORDINATOR_OPENAI_FIELDS_H_
#define TANDEM_SERVICES_COORDINATOR_OPENAI_FIELDS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/json.h"

namespace tandem::openai {

// `status` with `param` as the field it is about (#30 front: for errors made elsewhere).
absl::Status WithParam(absl::Status status, absl::string_view param);
// kInvalidArgument "field: what", with `field` as its param.
absl::Status Invalid(absl::string_view field, absl::string_view what);
// kInvalidArgument "field: expected E, got T".
absl::Status WrongType(absl::string_view field, absl::string_view expected, const json::Value& v);
// kInvalidArgument "`what` is not supported by Tandem's OpenAI-compatible API`why`", with
// `param` as its param (what names the field and the value refused).
absl::Status Unsupported(absl::string_view param, absl::string_view what, absl::string_view why);

absl::StatusOr<bool> Bool(absl::string_view field, const json::Value& v);
absl::StatusOr<int64_t> Int(absl::string_view field, const json::Value& v, int64_t min,
                            int64_t max);
absl::StatusOr<double> Number(absl::string_view field, const json::Value& v);
// A number stored in a float field (one beyond float's range is refused).
absl::StatusOr<float> Float(absl::string_view field, const json::Value& v);
absl::StatusOr<std::string> String(absl::string_view field, const json::Value& v);

// The field an error names (as Invalid and Unsupported attach it); nullopt for another error.
std::optional<std::string> ErrorParam(const absl::Status& status);

}  // namespace tandem::openai

#endif  // TANDEM_SERVICES_COORDINATOR_OPENAI_FIELDS_H_
