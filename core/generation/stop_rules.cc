#include "core/generation/stop_rules.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace tandem {

absl::Status ValidateGenerateRequest(absl::Span<const int32_t> context, int64_t max_tokens,
                                     int64_t context_size) {
  if (context.empty()) return absl::InvalidArgumentError("generate: the context is empty");
  if (max_tokens <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("generate: max_tokens must be positive, got ", max_tokens));
  }
  if (static_cast<int64_t>(context.size()) > context_size) {
    return absl::OutOfRangeError(absl::StrCat("generate: the context has ", context.size(),
                                              " tokens but the cache holds ", context_size));
  }
  return absl::OkStatus();
}

int64_t CommonPrefixLength(absl::Span<const int32_t> a, absl::Span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int64_t>(i);
}

bool StopRules::IsStopId(int32_t token) const {
  return std::find(stop_ids_.begin(), stop_ids_.end(), token) != stop_ids_.end();
}

std::optional<StopReason> StopRules::Limits(int64_t position) const {
  if (generated_ >= max_tokens_) return StopReason::kMaxTokens;
  if (position >= context_size_) return StopReason::kCacheFull;
  return std::nullopt;
}

std::optional<StopReason> StopRules::Emit(int32_t token, int64_t position) {
  if (IsStopId(token)) {
    stop_token_ = token;
    return StopReason::kStopId;
  }
  ++generated_;
  if (!on_token_(token)) return StopReason::kCallback;
  return Limits(position);
}

std::optional<StopReason> StopRules::EmitRound(absl::Span<const int32_t> tokens, int64_t position,
                                               RoundTokensCallback on_round,
                                               std::vector<int32_t>* emitted) {
  emitted->clear();
  std::optional<StopReason> stop;
  for (int32_t token : tokens) {
    if (IsStopId(token)) {
      stop_token_ = token;
      stop = StopReason::kStopId;
      break;
    }
    ++generated_;
    emitted->push_back(token);
    stop = Limits(position + static_cast<int64_t>(emitted->size()) - 1);
    if (stop) break;
  }
  if (emitted->empty()) return stop;
  const size_t reported = emitted->size();
  if (!on_round(*emitted)) {
    stop = StopReason::kCallback;
    stop_token_ = -1;  // the call ended before a stop id later in the round
  }
  generated_ -= static_cast<int64_t>(reported - std::min(reported, emitted->size()));
  return stop;
}

}  // namespace tandem
