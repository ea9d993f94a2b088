// Embeddings: one vector per token sequence, pooled from the model's hidden states.
//
//   ASSIGN_OR_RETURN(std::vector<float> e, Embed(decoder, tokens, Pooling::kMean, KvType::kF16));
//
// The hidden states are those after the final RMSNorm (output_norm), the vectors the output
// projection turns into logits: llama.cpp's embedding tensor (`t_embd`, "result_norm") for
// decoder-only models. Pooling takes their mean over the input's positions, or the last
// position's row (what a causal model has read the whole input by); the pooled vector is then
// scaled to unit L2 norm (a zero vector stays zero), so a dot product is the cosine.
//
// An input runs from position 0 on a scratch cache of its own (ScratchCache): no session's
// cache is read or written, and its embedding is the same bits alone or beside other inputs
// (the decoder's batch invariance; pooling sums in one fixed order).
#ifndef TANDEM_CORE_DECODER_EMBEDDING_H_
#define TANDEM_CORE_DECODER_EMBEDDING_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/decoder/decoder.h"
#include "core/decoder/kv_cache.h"

namespace tandem {

enum class Pooling { kMean, kLast };

absl::string_view PoolingName(Pooling pooling);  // "mean" / "last"
// "mean" or "last"; kInvalidArgument naming the value otherwise.
absl::StatusOr<Pooling> ParsePooling(absl::string_view name);

// Pools hidden states [n, dim] (n >= 1) into one unit vector [dim]: the mean (summed in double,
// position by position) or the last row, then divided by its L2 norm (in double).
// kInvalidArgument for no rows or a size that is not a multiple of dim.
absl::StatusOr<std::vector<float>> PoolHidden(absl::Span<const float> hidden, int64_t dim,
                                              Pooling pooling);

// A private cache (KvCache::Create) of `positions` positions for one input's pass: outside
// every session's pool, freed with it.
absl::StatusOr<std::unique_ptr<KvCache>> ScratchCache(const Decoder& decoder, int64_t positions,
                                                      KvType type);

// Runs `tokens` through `decoder` in passes of at most Decoder::kMaxChunk rows on a scratch
// cache and returns the rows' final-norm hidden states [n, dim]. The decoder's errors as is
// (kInvalidArgument for no tokens or an id outside the vocabulary, kOutOfRange past the
// model's context).
absl::StatusOr<std::vector<float>> HiddenStates(Decoder& decoder, absl::Span<const int32_t> tokens,
                                                KvType type);

// HiddenStates, then PoolHidden.
absl::StatusOr<std::vector<float>> Embed(Decoder& decoder, absl::Span<const int32_t> tokens,
                                         Pooling pooling, KvType type);

}  // namespace tandem

#endif  // TANDEM_CORE_DECODER_EMBEDDING_H_
