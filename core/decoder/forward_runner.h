// What runs a model's forward pass for one session's cache: the Decoder itself (in-process,
// one caller at a time) or a worker's batch scheduler (many sessions' rows in one pass). The
// speculative round's halves (core/generation/speculative_round.h) are written against this,
// so the same code serves an in-process session and a batched worker.
#ifndef TANDEM_CORE_DECODER_FORWARD_RUNNER_H_
#define TANDEM_CORE_DECODER_FORWARD_RUNNER_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/decoder/kv_cache.h"

namespace tandem {

// Which rows of a pass produce logits: none (a prefill chunk that is not the last), the last
// row (prefill, decode), or every row (verify).
enum class LogitsMode { kNone, kLast, kAll };

class ForwardRunner {
 public:
  virtual ~ForwardRunner() = default;

  // Runs `tokens` at positions [start, start + n) of `cache` (truncated to `start` first) and
  // returns logits [rows, vocab] (rows 0, 1 or n by `mode`), valid until this runner's next
  // call. Errors: see Decoder::Forward.
  virtual absl::StatusOr<absl::Span<const float>> Forward(KvCache& cache,
                                                          absl::Span<const int32_t> tokens,
                                                          int64_t start, LogitsMode mode) = 0;
};

}  // namespace tandem

#endif  // TANDEM_CORE_DECODER_FORWARD_RUNNER_H_
