// Generator.Detokenize and the HTTP API's POST /detokenize (issue 30): token ids back into
// text with the target's vocabulary bytes, exactly as Generate streams them (text_stream.h:
// well-formed UTF-8, a character split over ids joined, bytes that never complete one become
// U+FFFD; no leading space is dropped).
//
// Thread-safe (no state).
#ifndef TANDEM_SERVICES_COORDINATOR_DETOKENIZE_H_
#define TANDEM_SERVICES_COORDINATOR_DETOKENIZE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

// kInvalidArgument for more than `max_ids` ids or an id outside
// [0, token_bytes.size()), naming the first such id and its index.
absl::StatusOr<v1::DetokenizeResponse> Detokenize(const v1::DetokenizeRequest& request,
                                                  const std::vector<std::string>& token_bytes,
                                                  size_t max_ids);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_DETOKENIZE_H_
