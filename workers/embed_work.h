// A worker's embeddings (Worker.Embed): each input runs from position 0 on a scratch cache of
// its own (core/decoder/embedding.h) as one prefill-like work of the batch scheduler, so decode
// and verify rows of the sessions go first and no session's cache is read or written; its
// rows' final-norm hidden states are then pooled and L2-normalized. Inputs run one after
// another; each one's embedding is the same bits whatever else runs (batch invariance).
//
// The scratch cache is a private KvCache::Create of the input's length, outside the KV budget,
// freed when the input is done (at most one per call at a time).
#ifndef TANDEM_WORKERS_EMBED_WORK_H_
#define TANDEM_WORKERS_EMBED_WORK_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/decoder/decoder.h"
#include "core/decoder/embedding.h"
#include "workers/batch_scheduler.h"

namespace tandem {

struct EmbedLimits {
  int64_t context_size = 0;         // each input at most this many tokens (the worker's context)
  int64_t max_inputs = 2048;        // inputs per call
  int64_t max_total_tokens = 65536;  // tokens of all inputs together
};

struct EmbedOutput {
  std::vector<std::vector<float>> embeddings;  // one unit vector per input, in order
  double queue_seconds = 0;                    // until the first input's first rows ran
  double compute_seconds = 0;                  // the rest
};

// Checks every input before any work: kInvalidArgument for no inputs, too many inputs or
// tokens in all, an empty input or an id outside [0, vocab_size) (naming the input's index
// and the id); kOutOfRange for an input longer than limits.context_size (naming its index).
absl::Status CheckEmbedInputs(absl::Span<const std::vector<int32_t>> inputs, int64_t vocab_size,
                              const EmbedLimits& limits);

// CheckEmbedInputs, then each input through `scheduler` (whose decoder is `decoder`; only its
// model and shapes are read here) with a scratch cache of `kv_type`. `cancelled` (may be null)
// is polled between inputs: kDeadlineExceeded once it says so. The scheduler's errors as is.
absl::StatusOr<EmbedOutput> EmbedOnScheduler(BatchScheduler& scheduler, const Decoder& decoder,
                                             KvType kv_type, const EmbedLimits& limits,
                                             absl::Span<const std::vector<int32_t>> inputs,
                                             Pooling pooling,
                                             const std::function<bool()>& cancelled = nullptr);

}  // namespace tandem

#endif  // TANDEM_WORKERS_EMBED_WORK_H_
