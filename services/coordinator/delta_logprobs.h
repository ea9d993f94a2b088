// GenerateRequest.logprobs on the coordinator: the request's check, and the copy of a target's
// per-token logprobs (VerifyResult.logprobs) into the TokenDelta a client reads, with each
// token's bytes added from the target's vocabulary.
//
// Thread-compatible plain functions.
#ifndef TANDEM_SERVICES_COORDINATOR_DELTA_LOGPROBS_H_
#define TANDEM_SERVICES_COORDINATOR_DELTA_LOGPROBS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

// kInvalidArgument naming the field: top_logprobs outside [0, 20], or set without logprobs.
absl::Status CheckLogprobsRequest(const v1::GenerateRequest& request);

// Appends `from` to `delta`'s logprobs with token_bytes set from `token_bytes` (by id; an id
// outside it gets no bytes).
void AppendLogprobs(const v1::TokenLogprobs& from, const std::vector<std::string>& token_bytes,
                    v1::TokenDelta* delta);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_DELTA_LOGPROBS_H_
