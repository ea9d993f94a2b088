// OpenAI's logit_bias, presence_penalty and frequency_penalty in a chat or completions body,
// read into tandem.v1.SamplingParams (fields 9-11). logit_bias is OpenAI's shape: a JSON
// object whose keys are token ids as decimal strings ("50256") and whose values are numbers in
// [-100, 100]; the penalties are numbers in [-2, 2]. A wrong type, a key that is not a token id
// in canonical decimal form (no sign, no leading zero, at most int32), or a value out of range
// is kInvalidArgument naming the field (error.param). Whether an id is in the model's
// vocabulary, and how many entries a request may have, the coordinator checks
// (validated_request.h, request_limits.h).
//
// Thread-safe (no state).
#ifndef TANDEM_SERVICES_COORDINATOR_OPENAI_SAMPLING_H_
#define TANDEM_SERVICES_COORDINATOR_OPENAI_SAMPLING_H_

#include <string>

#include "absl/status/status.h"
#include "core/base/json.h"
#include "tandem/v1/common.pb.h"

namespace tandem::openai {

// Reads `key` (one of logit_bias, presence_penalty, frequency_penalty) into `out`.
absl::Status OpenAiSamplingField(const std::string& key, const json::Value& v,
                                 v1::SamplingParams* out);

}  // namespace tandem::openai

#endif  // TANDEM_SERVICES_COORDINATOR_OPENAI_SAMPLING_H_
