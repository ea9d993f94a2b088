#include "client/logits/logits_runner.h"

#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/decoder/decoder.h"
#include "core/decoder/kv_cache.h"
#include "core/kernels/thread_pool.h"

namespace tandem {

absl::StatusOr<std::vector<float>> AllPositionLogits(const Model& model,
                                                     absl::Span<const int32_t> tokens,
                                                     int threads) {
  const ModelConfig& config = model.config();
  if (tokens.empty()) return absl::InvalidArgumentError("no token ids to run");
  if (threads < 1) return absl::InvalidArgumentError(absl::StrCat("threads ", threads));
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= config.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("token id ", tokens[i], " at position ", i,
                                                     " is outside the vocabulary (",
                                                     config.vocab_size, " ids) of ", model.path()));
    }
  }
  const auto n = static_cast<int64_t>(tokens.size());
  if (n > config.context_length) {
    return absl::OutOfRangeError(absl::StrCat(n, " tokens exceed the context of ",
                                              config.context_length, " positions of ",
                                              model.path()));
  }
  ThreadPool pool(threads);
  Decoder decoder(model, pool);
  // F32 keys and values: the references are computed with an F32 cache.
  ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache, decoder.NewCache(n, KvType::kF32));
  ASSIGN_OR_RETURN(absl::Span<const float> logits,
                   decoder.Forward(*cache, tokens, 0, LogitsMode::kAll));
  return std::vector<float>(logits.begin(), logits.end());
}

}  // namespace tandem
