#include "services/coordinator/detokenize.h"

#include "absl/strings/str_cat.h"
#include "services/coordinator/text_stream.h"

namespace tandem {

absl::StatusOr<v1::DetokenizeResponse> Detokenize(const v1::DetokenizeRequest& request,
                                                  const std::vector<std::string>& token_bytes,
                                                  size_t max_ids) {
  if (static_cast<size_t>(request.token_ids_size()) > max_ids) {
    return absl::InvalidArgumentError(absl::StrCat("token_ids: ", request.token_ids_size(),
                                                   " ids; at most ", max_ids,
                                                   " (the target's context)"));
  }
  TextStream stream(&token_bytes, {});
  v1::DetokenizeResponse response;
  for (int i = 0; i < request.token_ids_size(); ++i) {
    const int32_t id = request.token_ids(i);
    if (id < 0 || static_cast<size_t>(id) >= token_bytes.size()) {
      return absl::InvalidArgumentError(absl::StrCat("token_ids[", i, "] = ", id,
                                                     " is not in the vocabulary [0, ",
                                                     token_bytes.size(), ")"));
    }
    response.mutable_text()->append(stream.Add(id));
  }
  response.mutable_text()->append(stream.Flush());
  return response;
}

}  // namespace tandem
