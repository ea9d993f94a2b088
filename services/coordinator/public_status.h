// What a public client (tandem.v1.Generator) may see of an error: the code and the message
// with every internal name -- worker addresses, model file paths -- replaced by a neutral
// label ("target-0", "draft-1", the model's name). The full message goes to the log.
// Payloads (the request field an error is about) are kept.
//
// Thread-safe (no state).
#ifndef TANDEM_SERVICES_COORDINATOR_PUBLIC_STATUS_H_
#define TANDEM_SERVICES_COORDINATOR_PUBLIC_STATUS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace tandem {

// {internal name, what clients see instead}; empty names are ignored.
using Redactions = std::vector<std::pair<std::string, std::string>>;

// `status` with each internal name replaced; longer names first, so that one name that
// contains another ("10.0.0.1:50051" and "10.0.0.1:5005") is replaced whole.
absl::Status PublicStatus(const absl::Status& status, const Redactions& redactions);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_PUBLIC_STATUS_H_
