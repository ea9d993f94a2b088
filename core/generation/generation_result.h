// What a Generate call reports besides its tokens: why it stopped and its statistics.
// Shared by Session and SpeculativeSession (whose speculation fields are zero without a draft).
#ifndef TANDEM_CORE_GENERATION_GENERATION_RESULT_H_
#define TANDEM_CORE_GENERATION_GENERATION_RESULT_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/generation/draft_cost_model.h"

namespace tandem {

// Why a Generate call ended, in the order the rules are checked for each token.
enum class StopReason {
  kStopId,     // the model produced a stop id (not counted, not reported)
  kCallback,   // the callback returned false after a token
  kMaxTokens,  // the token limit was reached (the last token is reported but never run)
  kCacheFull,  // no room in the KV cache for the last reported token
};
absl::string_view StopReasonName(StopReason reason);  // "stop_id", "callback", ...

struct GenerationStats {
  int64_t prompt_tokens = 0;     // context tokens run by the prefill (not reused)
  int64_t reused_tokens = 0;     // context tokens already in the cache
  int64_t generated_tokens = 0;  // tokens reported to the callback
  double prefill_seconds = 0;    // wall clock of the prefill
  double decode_seconds = 0;     // wall clock from the prefill's end to the call's end

  double prefill_tokens_per_second() const {
    return prefill_seconds > 0 ? prompt_tokens / prefill_seconds : 0;
  }
  double decode_tokens_per_second() const {
    return decode_seconds > 0 ? generated_tokens / decode_seconds : 0;
  }
};

// Speculative rounds of one call.
struct SpeculationStats {
  int64_t rounds = 0;
  int64_t drafted = 0;   // guesses the draft made
  int64_t accepted = 0;  // guesses the target kept
  // Forced tokens (round_driver.h): free guesses where the output's constraint allowed one
  // token, and of those, kept. Not counted in drafted and accepted.
  int64_t forced = 0;
  int64_t forced_accepted = 0;
  // Predicted guesses (round_driver.h: the client's predicted output), tested and kept, and
  // the rounds that tested them. Not counted in drafted and accepted.
  int64_t predicted = 0;
  int64_t predicted_accepted = 0;
  int64_t predicted_rounds = 0;
  int64_t round_tokens = 0;  // tokens the rounds yielded (kept guesses + one per round)
  // Index i: rounds with a guess i + 1, and how many of those kept it.
  std::vector<int64_t> drafted_per_position;
  std::vector<int64_t> accepted_per_position;
  // The k the next round would have asked for; 0 with no drafter left in use.
  int32_t final_draft_tokens = 0;
  bool draft_failed = false;  // the draft was abandoned (round_driver.h)
  // Pipelined drafting (round_driver.h): whether the rounds were pipelined, how many draft
  // calls ran ahead during a verify, and how many rounds used guesses drafted that way.
  bool pipelined = false;
  int64_t ahead_drafts = 0;
  int64_t predrafted_rounds = 0;
  // With adaptive k: the cost model's estimates k was chosen from (DraftCostModel::Report).
  std::optional<DraftCostEstimates> cost_model;

  double acceptance_rate() const {
    return drafted > 0 ? static_cast<double>(accepted) / drafted : 0;
  }
  double tokens_per_round() const {
    return rounds > 0 ? static_cast<double>(round_tokens) / rounds : 0;
  }
};

struct GenerationResult {
  StopReason stop_reason = StopReason::kMaxTokens;
  int32_t stop_token = -1;  // the stop id that ended the call (kStopId), else -1
  GenerationStats stats;
  SpeculationStats speculation;  // zero for a plain Session
};

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_GENERATION_RESULT_H_
