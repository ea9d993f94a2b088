// Runs token ids through a model in one forward pass with logits at every position, as the
// reference dumps are made (one sequence from position 0, F32 K/V cache), giving the
// [n_tokens, vocab] matrix tandem-logits writes and the fixture tests compare.
//
// Thread-safe for distinct calls (each makes its own thread pool, Decoder and cache).
#ifndef TANDEM_CLIENT_LOGITS_LOGITS_RUNNER_H_
#define TANDEM_CLIENT_LOGITS_LOGITS_RUNNER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/decoder/model.h"

namespace tandem {

// Logits [tokens.size(), vocab] in C order. kInvalidArgument: no tokens, threads < 1, an id
// outside the vocabulary (naming the id, its position and the model); kOutOfRange: more
// tokens than the model's context.
absl::StatusOr<std::vector<float>> AllPositionLogits(const Model& model,
                                                     absl::Span<const int32_t> tokens, int threads);

}  // namespace tandem

#endif  // TANDEM_CLIENT_LOGITS_LOGITS_RUNNER_H_
