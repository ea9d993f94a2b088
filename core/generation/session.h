// One conversation with one model: a KV cache kept between Generate calls, a Sampler and the
// stop rules.
//
//   ASSIGN_OR_RETURN(auto session, Session::Create(model, pool, options));
//   ASSIGN_OR_RETURN(GenerationResult r, session->Generate(context, 256, [&](int32_t t) {
//     Print(t);
//     return true;
//   }));
//
// Generate takes the whole context so far. A longest-common-prefix match finds how much of it
// the cache already holds; at most context.size() - 1 tokens are reused (so there is always a
// token to run), the rest runs as one (chunked) prefill, then tokens are sampled, reported
// and fed back one at a time. The sampler's context is the session's cached tokens, so the
// repetition penalty covers the prompt and the reply so far. Each token is the target's own
// draw at its absolute position (DrawTargetToken, acceptance.h: the kBonus stream over the
// filtered distribution; under Coupling::kGumbel its Gumbel pick, gumbel_coupling.h), exactly
// as a target worker draws it in a verify without guesses, so seeded output is the same
// in-process and through a coordinator without a draft.
//
// A constrained call (a TokenConstraint, output_constraint.h) masks every generated token's
// distribution before the sampler's first step; the first generated token is the first
// constrained one (the context is not). A dead end ends the call with DeadEndError after the
// tokens before it were reported.
//
// Stop rules and errors: see stop_rules.h. A failed forward pass is returned as is and leaves
// the session usable.
//
// Thread-safety: not thread-safe; runs on one inference thread (it owns a Decoder). The Model
// and ThreadPool are shared and must outlive the session.
#ifndef TANDEM_CORE_GENERATION_SESSION_H_
#define TANDEM_CORE_GENERATION_SESSION_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/decoder/decoder.h"
#include "core/decoder/kv_cache.h"
#include "core/decoder/model.h"
#include "core/generation/generation_result.h"
#include "core/generation/output_constraint.h"
#include "core/generation/sampler.h"
#include "core/generation/stop_rules.h"
#include "core/kernels/thread_pool.h"

namespace tandem {

struct SessionOptions {
  SamplerConfig sampler;
  int64_t context_size = 0;       // KV cache positions; 0: the model's context length
  std::vector<int32_t> stop_ids;  // e.g. EOS and end-of-turn ids
  KvType kv_type = KvType::kF16;
};

class Session {
 public:
  // kInvalidArgument for a bad sampler config or a negative context size; the cache's
  // errors (kResourceExhausted) as is.
  static absl::StatusOr<std::unique_ptr<Session>> Create(const Model& model, ThreadPool& pool,
                                                         const SessionOptions& options);

  // Generates up to `max_tokens` tokens after `context`, reporting each to `on_token`,
  // constrained by `constraint` if not null (synced to the output for each token; it must not
  // be used elsewhere during the call). The output begins after `context` (the sampler's
  // output_start, for the presence and frequency penalties).
  // kInvalidArgument for an empty context or a non-positive limit, kOutOfRange for a context
  // longer than the cache; forward-pass errors (e.g. an id outside the vocabulary) as is;
  // kInvalidArgument for a dead end of the constraint (DeadEndError).
  absl::StatusOr<GenerationResult> Generate(absl::Span<const int32_t> context, int64_t max_tokens,
                                            TokenCallback on_token,
                                            TokenConstraint* constraint = nullptr);

  // Forgets the cached conversation.
  void Reset() { cached_.clear(); }
  // Keys later calls' random draws by `seed` (the cache is kept).
  void set_seed(uint64_t seed) {
    options_.sampler.seed = seed;
    sampler_.set_seed(seed);
  }

  // The tokens whose keys and values the cache holds, in order.
  absl::Span<const int32_t> cached_tokens() const { return cached_; }
  int64_t context_size() const { return cache_->shape().context_size; }
  const SessionOptions& options() const { return options_; }

 private:
  Session(const Model& model, ThreadPool& pool, const SessionOptions& options, Sampler sampler);

  SessionOptions options_;
  Decoder decoder_;
  Sampler sampler_;
  std::unique_ptr<KvCache> cache_;
  std::vector<int32_t> cached_;  // the tokens in cache_, cache_->length() of them
  std::vector<float> p_;         // [vocab] the filtered distribution of the next token
  TokenMask mask_;               // constrained: the tokens allowed next
};

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_SESSION_H_
