// Coordinator::Embed (coordinator.h): Generator.Embed and POST /v1/embeddings.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "services/coordinator/coordinator.h"

namespace tandem {
namespace {

// The ids of one input: a text tokenized as a text prompt is, or its ids checked against the
// vocabulary. Errors name the input's index.
absl::StatusOr<std::vector<int32_t>> InputIds(
    const v1::EmbedInput& input, int index, int32_t vocab_size,
    const std::function<absl::StatusOr<v1::TokenizeResponse>(const v1::TokenizeRequest&)>&
        tokenize) {
  switch (input.input_case()) {
    case v1::EmbedInput::kText: {
      if (input.text().empty()) {
        return absl::InvalidArgumentError(absl::StrCat("inputs[", index, "]: the text is empty"));
      }
      v1::TokenizeRequest request;
      request.set_text(input.text());
      request.set_add_special(true);
      ASSIGN_OR_RETURN(v1::TokenizeResponse tokens, tokenize(request));
      return std::vector<int32_t>(tokens.token_ids().begin(), tokens.token_ids().end());
    }
    case v1::EmbedInput::kTokenIds: {
      if (input.token_ids().ids().empty()) {
        return absl::InvalidArgumentError(absl::StrCat("inputs[", index, "] has no token ids"));
      }
      for (int32_t id : input.token_ids().ids()) {
        if (id < 0 || id >= vocab_size) {
          return absl::InvalidArgumentError(absl::StrCat("inputs[", index, "]: token id ", id,
                                                         " is outside the vocabulary of ",
                                                         vocab_size));
        }
      }
      return std::vector<int32_t>(input.token_ids().ids().begin(), input.token_ids().ids().end());
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("inputs[", index, "] has neither text nor token_ids"));
  }
}

absl::Status ExpiredError() {
  return absl::DeadlineExceededError("embed: the request's deadline passed");
}

}  // namespace

absl::StatusOr<v1::EmbedResponse> Coordinator::Embed(const v1::EmbedRequest& request,
                                                     absl::Time deadline) {
  RETURN_IF_ERROR(CheckEmbedLimits(request, options_.limits));
  if (request.inputs().empty()) return absl::InvalidArgumentError("inputs: none given");
  if (!v1::EmbedPooling_IsValid(request.pooling())) {
    return absl::InvalidArgumentError(absl::StrCat("pooling: unknown value ", request.pooling()));
  }
  deadline = std::min(deadline, absl::Now() + options_.max_request_time);
  const int64_t context = target_info_.context_size();
  v1::EmbedTokensRequest forward;
  forward.set_pooling(request.pooling());
  int64_t total = 0;
  for (int i = 0; i < request.inputs_size(); ++i) {
    ASSIGN_OR_RETURN(std::vector<int32_t> ids,
                     InputIds(request.inputs(i), i, target_info_.vocab_size(),
                              [this](const v1::TokenizeRequest& r) { return Tokenize(r); }));
    if (static_cast<int64_t>(ids.size()) > context) {
      return absl::OutOfRangeError(absl::StrCat("inputs[", i, "] is ", ids.size(),
                                                " tokens, longer than the context of ", context));
    }
    total += static_cast<int64_t>(ids.size());
    if (total > options_.limits.max_embed_tokens) {
      return absl::InvalidArgumentError(absl::StrCat("inputs[", i, "] brings the tokens to ", total,
                                                     "; the limit is ",
                                                     options_.limits.max_embed_tokens, " in all"));
    }
    forward.add_inputs()->mutable_ids()->Add(ids.begin(), ids.end());
  }
  if (absl::Now() >= deadline) return ExpiredError();
  // The least-loaded ready target; a failing one makes way for another, or for its restart.
  // The request's own deadline passing is no failure of the target's (OnReady would mark it
  // down): it ends the call as such.
  absl::StatusOr<v1::EmbedTokensResponse> answer;
  bool expired = false;
  const absl::Status called = targets_->OnReady(
      std::min(deadline, absl::Now() + options_.failover_wait), [&](size_t i) {
        answer = targets_->client(i).Embed(forward, deadline);
        if (absl::IsDeadlineExceeded(answer.status()) && absl::Now() >= deadline) {
          expired = true;
          return absl::CancelledError("past the request's deadline");
        }
        return answer.status();
      });
  if (expired) return ExpiredError();
  RETURN_IF_ERROR(called);
  if (answer->embeddings_size() != forward.inputs_size()) {
    return absl::InternalError(absl::StrCat("the target answered ", answer->embeddings_size(),
                                            " embeddings for ", forward.inputs_size(), " inputs"));
  }
  v1::EmbedResponse response;
  *response.mutable_embeddings() = std::move(*answer->mutable_embeddings());
  response.set_model(target_info_.name());
  response.set_pooling(answer->pooling());
  response.set_prompt_tokens(total);
  return response;
}

}  // namespace tandem
