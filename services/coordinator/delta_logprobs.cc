#include "services/coordinator/delta_logprobs.h"

#include "absl/strings/str_cat.h"
#include "core/generation/token_logprobs.h"

namespace tandem {
namespace {

void SetBytes(const std::vector<std::string>& token_bytes, v1::TokenLogprob* t) {
  const int32_t id = t->token_id();
  if (id >= 0 && static_cast<size_t>(id) < token_bytes.size()) {
    t->set_token_bytes(token_bytes[id]);
  } else {
    t->clear_token_bytes();
  }
}

}  // namespace

absl::Status CheckLogprobsRequest(const v1::GenerateRequest& request) {
  const int32_t top = request.top_logprobs();
  if (top < 0 || top > kMaxTopLogprobs) {
    return absl::InvalidArgumentError(
        absl::StrCat("top_logprobs ", top, " is outside [0, ", kMaxTopLogprobs, "]"));
  }
  if (top > 0 && !request.logprobs()) {
    return absl::InvalidArgumentError("top_logprobs needs logprobs set");
  }
  return absl::OkStatus();
}

void AppendLogprobs(const v1::TokenLogprobs& from, const std::vector<std::string>& token_bytes,
                    v1::TokenDelta* delta) {
  v1::TokenLogprobs* to = delta->add_logprobs();
  *to = from;
  SetBytes(token_bytes, to->mutable_token());
  for (v1::TokenLogprob& t : *to->mutable_top()) SetBytes(token_bytes, &t);
}

}  // namespace tandem
