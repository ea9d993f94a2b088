#include "core/decoder/embedding.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"

namespace tandem {

absl::string_view PoolingName(Pooling pooling) {
  return pooling == Pooling::kLast ? "last" : "mean";
}

absl::StatusOr<Pooling> ParsePooling(absl::string_view name) {
  if (name == "mean") return Pooling::kMean;
  if (name == "last") return Pooling::kLast;
  return absl::InvalidArgumentError(
      absl::StrCat("pooling \"", name, "\" is not one of \"mean\", \"last\""));
}

absl::StatusOr<std::vector<float>> PoolHidden(absl::Span<const float> hidden, int64_t dim,
                                              Pooling pooling) {
  const int64_t size = static_cast<int64_t>(hidden.size());
  if (dim <= 0 || size == 0 || size % dim != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("pooling: ", size, " hidden values are not rows of ", dim));
  }
  const int64_t n = size / dim;
  std::vector<double> sum(dim, 0.0);
  if (pooling == Pooling::kLast) {
    for (int64_t j = 0; j < dim; ++j) sum[j] = hidden[(n - 1) * dim + j];
  } else {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < dim; ++j) sum[j] += hidden[i * dim + j];
    }
    for (int64_t j = 0; j < dim; ++j) sum[j] /= static_cast<double>(n);
  }
  double norm = 0;
  for (int64_t j = 0; j < dim; ++j) norm += sum[j] * sum[j];
  norm = std::sqrt(norm);
  std::vector<float> out(dim, 0.0f);
  if (norm > 0) {
    for (int64_t j = 0; j < dim; ++j) out[j] = static_cast<float>(sum[j] / norm);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<KvCache>> ScratchCache(const Decoder& decoder, int64_t positions,
                                                      KvType type) {
  if (positions <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("scratch cache of ", positions, " positions"));
  }
  return KvCache::Create(decoder.CacheShape(positions), type);
}

absl::StatusOr<std::vector<float>> HiddenStates(Decoder& decoder, absl::Span<const int32_t> tokens,
                                                KvType type) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) return absl::InvalidArgumentError("embedding: no tokens");
  const int64_t dim = decoder.model().config().dim;
  const int64_t context = decoder.model().config().context_length;
  if (n > context) {
    return absl::OutOfRangeError(
        absl::StrCat("embedding: ", n, " tokens exceed the context of ", context));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache, ScratchCache(decoder, n, type));
  std::vector<float> hidden(n * dim);
  for (int64_t done = 0; done < n; done += Decoder::kMaxChunk) {
    const int64_t rows = std::min(Decoder::kMaxChunk, n - done);
    ForwardSegment segment{cache.get(), tokens.subspan(done, rows), done, LogitsMode::kNone,
                           hidden.data() + done * dim};
    RETURN_IF_ERROR(decoder.ForwardBatch(absl::MakeConstSpan(&segment, 1)).status());
  }
  return hidden;
}

absl::StatusOr<std::vector<float>> Embed(Decoder& decoder, absl::Span<const int32_t> tokens,
                                         Pooling pooling, KvType type) {
  ASSIGN_OR_RETURN(std::vector<float> hidden, HiddenStates(decoder, tokens, type));
  return PoolHidden(hidden, decoder.model().config().dim, pooling);
}

}  // namespace tandem
