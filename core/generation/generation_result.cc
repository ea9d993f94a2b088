#include "core/generation/generation_result.h"

namespace tandem {

absl::string_view StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kStopId:
      return "stop_id";
    case StopReason::kCallback:
      return "callback";
    case StopReason::kMaxTokens:
      return "max_tokens";
    case StopReason::kCacheFull:
      return "cache_full";
  }
  return "unknown";
}

}  // namespace tandem
