// --served-model-name: the names clients may put in a request's `model` for the target
// (issue 30). Without the flag the one name is the target's own (its GGUF general.name).
//
// Thread-safe (no state).
#ifndef TANDEM_SERVICES_COORDINATOR_SERVED_MODEL_NAMES_H_
#define TANDEM_SERVICES_COORDINATOR_SERVED_MODEL_NAMES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem {

constexpr int kMaxServedModelNames = 16;
constexpr size_t kMaxServedModelNameBytes = 256;

// "NAME[,NAME...]" (empty: none, the target's own name is used). Each name is 1-256 bytes of
// printable ASCII without spaces or commas ("meta-llama/Llama-3.2-1B", "gpt-4o-mini"); at most
// 16, no repeats. kInvalidArgument naming the flag and the bad name.
absl::StatusOr<std::vector<std::string>> ParseServedModelNames(absl::string_view flag);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_SERVED_MODEL_NAMES_H_
