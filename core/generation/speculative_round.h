// The two halves of a speculative round as plain functions over one model's decoder, cache
// and sampler, shared by SpeculativeSession (both halves in one process) and the draft and
// target workers (one half each, driven by the coordinator). Sharing them is what makes
// distributed output equal in-process output for the same seed.
//
// `sequence` is the conversation so far with the pending token (sampled, not yet run by the
// target) last. Caches sync by position: each call first reuses the longest prefix of
// `sequence` the cache holds and runs the rest, so rolled-back guesses are simply overwritten.
//
// Each half takes the request's output constraint (output_constraint.h; none by default), the
// target's and the draft's being separate objects: every position it samples is masked.
//
// Not thread-safe: call from the thread that owns the runner (a Decoder, or a worker
// session's handle on the batch scheduler) and the constraint.
#ifndef TANDEM_CORE_GENERATION_SPECULATIVE_ROUND_H_
#define TANDEM_CORE_GENERATION_SPECULATIVE_ROUND_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/decoder/decoder.h"
#include "core/decoder/kv_cache.h"
#include "core/generation/acceptance.h"
#include "core/generation/output_constraint.h"
#include "core/generation/sampler.h"

namespace tandem {

// Target tokens the draft's vocabulary lacks (a draft up to 128 ids smaller) run on the draft
// as this id. The draft only proposes, so this costs acceptance, never correctness.
inline constexpr int32_t kDraftStandIn = 0;

// `tokens` with every id outside [0, vocab_size) replaced by kDraftStandIn.
void ToDraftVocabulary(absl::Span<const int32_t> tokens, int64_t vocab_size,
                       std::vector<int32_t>* out);

// One model's cache and the tokens it holds.
struct ModelState {
  std::unique_ptr<KvCache> cache;
  std::vector<int32_t> cached;  // the tokens in `cache`, in order
};

struct RunOutput {
  absl::Span<const float> logits;  // of the tokens run; empty when all were reused
  int64_t reused = 0;              // leading tokens of the request already in the cache
};

// Brings `state` to `tokens`, reusing at most `max_reuse` cached tokens and running the rest.
absl::StatusOr<RunOutput> RunTokens(ForwardRunner& decoder, ModelState& state,
                                    absl::Span<const int32_t> tokens, int64_t max_reuse,
                                    LogitsMode mode);

// Draft half: samples up to `k` guesses after `sequence` (target ids; see kDraftStandIn) from
// the draft's filtered distributions q (sparse), feeding each back except the last. Guess i
// sits at absolute position sequence.size() + i and is drawn with
// Sampler::Draw(q.probabilities, CounterUniform(seed, position, kDraftDraw)), or under
// Coupling::kGumbel (sampler.config().coupling) is GumbelPick(q, seed, position).
// Constrained, each q is masked by the draft's constraint walked through the sequence and the
// earlier guesses; the guesses end where it allows no token of the draft's vocabulary (or
// fails): the draft only proposes, and the target reports what it must.
absl::Status DraftGuesses(ForwardRunner& decoder, ModelState& state, Sampler& sampler,
                          absl::Span<const int32_t> sequence, int32_t k, uint64_t seed,
                          std::vector<int32_t>* guesses, std::vector<SparseDistribution>* q,
                          const OutputConstraint& constrained = {});

// Reusable buffers of the target half.
struct VerifyScratch {
  std::vector<int32_t> batch;
  std::vector<float> p;
  std::vector<TokenMask> masks;  // constrained: one per row
  // After VerifyGuesses: the raw logits rows of the pending token and the guesses run after
  // it ([rows, vocab]; row i predicted guess i, row `accepted` the next token), valid until
  // the runner's next forward pass.
  absl::Span<const float> rows;
};

// Target half: runs [pending, guesses that are in the vocabulary] as one batched pass,
// filters each row with `sampler` into p and applies AcceptGuesses (Coupling::kGumbel:
// AcceptGuessesGumbel, which reads no q; `q` may then be empty). `guesses` is cut to the
// guesses tested (those up to and including the first outside the vocabulary).
// Constrained, every row is masked, the bonus row included, walking the constraint through
// the guesses. A guess it refuses is treated as one outside the vocabulary: tested (p = 0
// rejects it for certain) and the last run. A guess after which it allows nothing ends the
// guesses tested: DeadEndError if the round keeps it (the next token has nowhere to go), so
// does a dead end right after the sequence.
absl::StatusOr<AcceptanceResult> VerifyGuesses(ForwardRunner& decoder, ModelState& state,
                                               Sampler& sampler, absl::Span<const int32_t> sequence,
                                               std::vector<int32_t>* guesses,
                                               absl::Span<const SparseDistribution> q,
                                               uint64_t seed, VerifyScratch* scratch,
                                               const OutputConstraint& constrained = {});

// Target half without a draft, several tokens in one call: `first` was just drawn for position
// state.cached.size(); runs it, draws the next token, and so on, `steps` more tokens into
// `tokens` (fewer at the end of the cache). Each is drawn exactly as a verify of its
// predecessor with no guesses draws it (the sampler over the cache's history, PickTargetToken
// at its position), so the tokens equal those of `steps` one-token rounds. The last token is
// not run: it is the next round's pending token. Constrained, each is masked as a verify row;
// the tokens stop before a dead end, which the next verify then reports.
absl::Status ContinueAlone(ForwardRunner& decoder, ModelState& state, Sampler& sampler,
                           int32_t first, int32_t steps, uint64_t seed, VerifyScratch* scratch,
                           std::vector<int32_t>* tokens, const OutputConstraint& constrained = {});

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_SPECULATIVE_ROUND_H_
