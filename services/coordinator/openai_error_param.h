// error.param for the refusals the coordinator makes (issue 30): the HTTP parser's own
// errors name their field already (openai_fields.h), but a request can also be refused by
// the coordinator's validation (validated_request.h, request_limits.h, the sampler's checks,
// the tool and reasoning syntax), which names the gRPC field ("sampling.temperature",
// "stop_strings[0]", "chat.messages") at the start of its message, or by the constraint
// compiler (a schema or grammar it cannot compile). This maps those onto the field of the
// OpenAI body the client sent ("temperature", "stop", "messages"; a compile error onto
// response_format, grammar or regex, whichever the request used; tools onto tools).
//
// One table, so that a new check in the coordinator that names its gRPC field gets its
// param here; openai_error_param_test.cc pins every 400 a bad request can get.
//
// Thread-safe (no state).
#ifndef TANDEM_SERVICES_COORDINATOR_OPENAI_ERROR_PARAM_H_
#define TANDEM_SERVICES_COORDINATOR_OPENAI_ERROR_PARAM_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "services/coordinator/openai_request.h"

namespace tandem {

// The OpenAI field a coordinator error about `request` names; nullopt when it names none.
std::optional<std::string> OpenAiParamOf(const absl::Status& status, const OpenAiRequest& request);

// `status` with OpenAiParamOf as its param when it is a client error (kInvalidArgument,
// kOutOfRange) without one; any other status as it is.
absl::Status WithOpenAiParam(absl::Status status, const OpenAiRequest& request);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_OPENAI_ERROR_PARAM_H_
