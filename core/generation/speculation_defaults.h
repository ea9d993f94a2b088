// The one home of speculative decoding's defaults and bounds, beside the sampling defaults
// (sampling_defaults.h): how many guesses a round makes when nothing names a number, the most
// a round may make, what a worker takes from any caller, and how long a reply runs when its
// request names no limit. The flags of tandem-coordinator and tandem-chat default to these,
// the option structs (SpeculativeOptions, DraftCostOptions, CoordinatorOptions, RoundParams,
// ChatOptions) start from them, and the validation of flags and requests checks against them.
// protos/tandem/v1/generator.proto and worker.proto quote the numbers in their comments:
// change both together.
#ifndef TANDEM_CORE_GENERATION_SPECULATION_DEFAULTS_H_
#define TANDEM_CORE_GENERATION_SPECULATION_DEFAULTS_H_

#include <cstdint>

namespace tandem {

// The bounds. A worker serves any caller (another coordinator, a benchmark), so it takes
// wider requests than the coordinator ever sends.
struct SpeculationLimits {
  // The most guesses one round of the coordinator or of tandem-chat makes: the largest k a
  // request (Speculation.draft_tokens) or --draft-tokens may name, and the ceiling of the
  // adaptive cost model's k.
  static constexpr int32_t kMaxDraftTokens = 16;
  // The most guesses a worker makes for one DraftRequest (num_tokens) or tests in one
  // VerifyRequest. A sliding-window cache keeps KvCache::kRingSlack positions beyond its
  // window so that rejecting this many needs no restart (static_assert in worker_engine.cc).
  static constexpr int32_t kWorkerMaxGuesses = 64;
  // The most tokens a target may draw alone after a verify without guesses
  // (VerifyRequest.continue_tokens; the coordinator's --continue-tokens).
  static constexpr int32_t kMaxContinueTokens = 64;
};

struct SpeculationDefaults {
  // k, the guesses per round, when neither the request (Speculation.draft_tokens = 0) nor
  // --draft-tokens names one; also the adaptive cost model's first k.
  static constexpr int32_t kDraftTokens = 4;
  // The guesses an n-gram (prompt-lookup) round asks for when the request names no k: the
  // most a round may make. --draft-tokens is a draft model's budget, but n-gram guesses cost
  // nothing to make and the drafter's own length rule (ngram_drafter.h) keeps short matches
  // short.
  static constexpr int32_t kNgramDraftTokens = SpeculationLimits::kMaxDraftTokens;
  // Tokens a verify without guesses lets the target draw alone by default (the coordinator's
  // --continue-tokens; the in-process target's fixed count).
  static constexpr int32_t kContinueTokens = 3;

  // The longest reply, in tokens, when nothing names one. The two differ on purpose:
  // - the coordinator's --max-tokens, for a request with max_tokens = 0: a server shares its
  //   workers' sessions among many clients, and a request that names no limit should not
  //   hold one long; a client that wants more says so;
  // - tandem-chat's --max-tokens, for each reply (in-process, and sent as max_tokens with
  //   --server): one user at a terminal, whose conversational replies should not stop
  //   mid-sentence; the run's cost is that user's own.
  static constexpr int32_t kServerMaxTokens = 256;
  static constexpr int32_t kChatMaxTokens = 512;
};

static_assert(SpeculationDefaults::kDraftTokens >= 1 &&
              SpeculationDefaults::kDraftTokens <= SpeculationLimits::kMaxDraftTokens);
static_assert(SpeculationLimits::kMaxDraftTokens <= SpeculationLimits::kWorkerMaxGuesses,
              "the coordinator asks a worker for no more guesses than it takes");
static_assert(SpeculationDefaults::kContinueTokens <= SpeculationLimits::kMaxContinueTokens);

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_SPECULATION_DEFAULTS_H_
