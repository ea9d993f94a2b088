// One conversation decoded speculatively: a small draft model guesses, the target verifies.
//
//   ASSIGN_OR_RETURN(auto session, SpeculativeSession::Create(target, draft, pool, options));
//   ASSIGN_OR_RETURN(GenerationResult r, session->Generate(context, 256, on_token));
//
// The last context token starts as the *pending* token (known, not yet run by the target).
// Each round (docs/architecture.md):
//   1. the draft syncs its cache to the sequence + pending, samples up to k guesses g1..gk
//      from its filtered distributions q1..qk (sparse), feeding each back;
//   2. the target runs [pending, g1..gk] as one batched forward pass (LogitsMode::kAll),
//      filters each row with the same sampler into p1..p(k+1), and AcceptGuesses keeps a
//      prefix of the guesses and yields the next pending token;
//   3. the kept guesses and the pending token are reported under the stop rules.
// Both caches sync by position: before running, each is cut to the longest prefix it shares
// with the sequence (the decoder truncates to the start position), so rolling back rejected
// guesses is implicit. Every position is sampled with its own history (earlier guesses of the
// round included) and keyed random numbers, so greedy output equals the target's alone token
// for token and sampled output is distributed exactly as the target's (lossless).
//
// A constrained call (SpeculativeConstraints, output_constraint.h) masks the target's every
// verify row and the draft's every guess, so greedy output is the constrained target's alone
// token for token and sampled output is distributed as it (with Gumbel coupling, equal to it
// for a seed); forced tokens are free guesses (round_driver.h).
//
// The rounds are RoundDriver's (round_driver.h) over in-process backends
// (in_process_backends.h), the loop the coordinator runs over its workers. Prefix reuse, stop
// rules, errors and GenerationStats are as in Session; SpeculationStats count the rounds.
//
// Thread-safety: not thread-safe; runs on one inference thread (it owns two Decoders that
// share `pool`). The models and the pool must outlive the session.
#ifndef TANDEM_CORE_GENERATION_SPECULATIVE_SESSION_H_
#define TANDEM_CORE_GENERATION_SPECULATIVE_SESSION_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/decoder/decoder.h"
#include "core/decoder/kv_cache.h"
#include "core/decoder/model.h"
#include "core/generation/acceptance.h"
#include "core/generation/draft_length_policy.h"
#include "core/generation/generation_result.h"
#include "core/generation/sampler.h"
#include "core/generation/session.h"
#include "core/generation/speculation_defaults.h"
#include "core/generation/speculative_round.h"
#include "core/generation/stop_rules.h"
#include "core/kernels/thread_pool.h"

namespace tandem {

struct SpeculativeOptions {
  SessionOptions session;  // sampler, context size, stop ids, KV type (both models)
  // k: guesses per round, in [1, max_draft_tokens].
  int32_t draft_tokens = SpeculationDefaults::kDraftTokens;
  // Choose k each round with a DraftCostModel (draft_cost_model.h) for the most tokens per
  // second, from the calls' CPU times; 0 runs the target alone for a while. draft_tokens is
  // the first round's k.
  bool adaptive = false;
  int32_t max_draft_tokens = SpeculationLimits::kMaxDraftTokens;
  // Pipelined rounds (round_driver.h): the draft guesses the next round's tokens past its
  // stand-in for the target's. Both models share this thread and its pool, so here the two
  // calls take turns (no time is saved); the output is the sequential one for a fixed k. It
  // exists so that in-process and distributed pipelined runs can be compared token for token.
  bool pipelined = false;
};

// The constraint objects of one constrained Generate call; null leaves that side alone. Each
// is synced to the output by content before every use, and in-process every call runs on this
// thread in turn, so one object may serve all three (the coordinator and its workers each hold
// their own).
struct SpeculativeConstraints {
  TokenConstraint* target = nullptr;  // masks the target's distributions: the output's constraint
  TokenConstraint* draft = nullptr;   // masks the draft's guesses (q): better guesses
  // Proposes the tokens the constraint forces as free guesses (RoundDriverOptions).
  TokenConstraint* forced_tokens = nullptr;
};

class SpeculativeSession {
 public:
  // kFailedPrecondition if the vocabularies differ (vocab_compatibility.h); kInvalidArgument
  // for a bad sampler config, context size or draft_tokens; cache errors as is.
  static absl::StatusOr<std::unique_ptr<SpeculativeSession>> Create(
      const Model& target, const Model& draft, ThreadPool& pool, const SpeculativeOptions& options);

  // As Session::Generate, constrained by `constraints` (the output is the target's
  // constraint's; none by default).
  absl::StatusOr<GenerationResult> Generate(absl::Span<const int32_t> context, int64_t max_tokens,
                                            TokenCallback on_token,
                                            const SpeculativeConstraints& constraints = {});

  // Forgets the cached conversation (both caches).
  void Reset();
  // Keys later calls' random draws by `seed` (the caches are kept).
  void set_seed(uint64_t seed);

  // The guesses the next round will ask for (changes between rounds when adaptive).
  int32_t draft_tokens() const { return k_policy_->Next(); }
  int64_t context_size() const { return target_.state.cache->shape().context_size; }
  // The tokens each cache holds, in order.
  absl::Span<const int32_t> target_cached_tokens() const { return target_.state.cached; }
  absl::Span<const int32_t> draft_cached_tokens() const { return draft_.state.cached; }

 private:
  // One model's decoder, sampler and cache.
  struct Side {
    Side(const Model& model, ThreadPool& pool, Sampler sampler);
    Decoder decoder;
    Sampler sampler;
    ModelState state;
  };

  SpeculativeSession(const Model& target, const Model& draft, ThreadPool& pool,
                     const SpeculativeOptions& options, Sampler target_sampler,
                     Sampler draft_sampler);

  SpeculativeOptions options_;
  Side target_;
  Side draft_;
  // k, kept across calls: a fixed one (FixedDraftLength) or the cost model (adaptive).
  std::unique_ptr<DraftLengthPolicy> k_policy_;
  // The sequence so far with the pending token last, and the verify pass's buffers.
  std::vector<int32_t> sequence_;
  VerifyScratch verify_scratch_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_SPECULATIVE_SESSION_H_
