#include "services/coordinator/api_reply.h"

#include "absl/strings/str_cat.h"

namespace tandem {

std::string SseEvent(absl::string_view name, absl::string_view data) {
  if (name.empty()) return absl::StrCat("data: ", data, "\n\n");
  return absl::StrCat("event: ", name, "\ndata: ", data, "\n\n");
}

}  // namespace tandem
