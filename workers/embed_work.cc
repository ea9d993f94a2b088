#include "workers/embed_work.h"

#include <chrono>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"

namespace tandem {

absl::Status CheckEmbedInputs(absl::Span<const std::vector<int32_t>> inputs, int64_t vocab_size,
                              const EmbedLimits& limits) {
  if (inputs.empty()) return absl::InvalidArgumentError("embed: no inputs");
  const int64_t count = static_cast<int64_t>(inputs.size());
  if (count > limits.max_inputs) {
    return absl::InvalidArgumentError(
        absl::StrCat("embed: ", count, " inputs exceed the limit of ", limits.max_inputs));
  }
  int64_t total = 0;
  for (int64_t i = 0; i < count; ++i) {
    const std::vector<int32_t>& input = inputs[i];
    const int64_t n = static_cast<int64_t>(input.size());
    if (n == 0) return absl::InvalidArgumentError(absl::StrCat("embed: input ", i, " is empty"));
    if (limits.context_size > 0 && n > limits.context_size) {
      return absl::OutOfRangeError(absl::StrCat("embed: input ", i, " has ", n,
                                                " tokens, more than the context of ",
                                                limits.context_size));
    }
    total += n;
    if (total > limits.max_total_tokens) {
      return absl::InvalidArgumentError(absl::StrCat("embed: input ", i, " brings the tokens to ",
                                                     total, ", over the limit of ",
                                                     limits.max_total_tokens));
    }
    for (int32_t id : input) {
      if (id < 0 || id >= vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat(
            "embed: input ", i, " has token id ", id, " outside the vocabulary of ", vocab_size));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<EmbedOutput> EmbedOnScheduler(BatchScheduler& scheduler, const Decoder& decoder,
                                             KvType kv_type, const EmbedLimits& limits,
                                             absl::Span<const std::vector<int32_t>> inputs,
                                             Pooling pooling,
                                             const std::function<bool()>& cancelled) {
  const ModelConfig& config = decoder.model().config();
  RETURN_IF_ERROR(CheckEmbedInputs(inputs, config.vocab_size, limits));
  const auto start = std::chrono::steady_clock::now();
  EmbedOutput out;
  std::vector<float> logits, hidden;  // logits: none are asked for; the scheduler wants a buffer
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (cancelled != nullptr && cancelled()) {
      return absl::DeadlineExceededError(
          absl::StrCat("embed: cancelled or past the deadline before input ", i));
    }
    const int64_t n = static_cast<int64_t>(inputs[i].size());
    ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache, ScratchCache(decoder, n, kv_type));
    BatchScheduler::Work work;
    work.cache = cache.get();
    work.tokens = inputs[i];
    work.start = 0;
    work.mode = LogitsMode::kNone;
    work.logits = &logits;
    work.hidden = &hidden;
    RETURN_IF_ERROR(scheduler.Run(work));
    if (i == 0) out.queue_seconds = work.queue_seconds;
    ASSIGN_OR_RETURN(std::vector<float> embedding, PoolHidden(hidden, config.dim, pooling));
    out.embeddings.push_back(std::move(embedding));
  }
  out.compute_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() -
      out.queue_seconds;
  return out;
}

}  // namespace tandem
