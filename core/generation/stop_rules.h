// The rules shared by Session and SpeculativeSession for checking a Generate request and for
// ending it, so both sessions stop at exactly the same token.
//
// For each new token, in order: a stop id ends the call before the token is counted or
// reported; then the callback (which may say stop); then the token limit; then a full cache.
// A token that ends the call by the limit or the cache is reported but never run.
//
// Thread-safety: a StopRules lives inside one Generate call.
#ifndef TANDEM_CORE_GENERATION_STOP_RULES_H_
#define TANDEM_CORE_GENERATION_STOP_RULES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/generation/generation_result.h"

namespace tandem {

// Receives each generated token; returns false to end the call after it.
using TokenCallback = absl::FunctionRef<bool(int32_t token)>;
// Receives a round's tokens at once (EmitRound); returns false to end the call after them.
// It may cut `tokens` to those it used (e.g. up to the one that completed a stop string):
// the rest count as never generated.
using RoundTokensCallback = absl::FunctionRef<bool(std::vector<int32_t>& tokens)>;

// kInvalidArgument for an empty context or a non-positive max_tokens; kOutOfRange for a
// context longer than the cache's `context_size`.
absl::Status ValidateGenerateRequest(absl::Span<const int32_t> context, int64_t max_tokens,
                                     int64_t context_size);

// The length of the longest common prefix of `a` and `b`.
int64_t CommonPrefixLength(absl::Span<const int32_t> a, absl::Span<const int32_t> b);

class StopRules {
 public:
  StopRules(absl::Span<const int32_t> stop_ids, int64_t max_tokens, int64_t context_size,
            TokenCallback on_token)
      : stop_ids_(stop_ids),
        max_tokens_(max_tokens),
        context_size_(context_size),
        on_token_(on_token) {}
  // For EmitRound only (no per-token callback).
  StopRules(absl::Span<const int32_t> stop_ids, int64_t max_tokens, int64_t context_size)
      : StopRules(stop_ids, max_tokens, context_size, GoOn) {}

  // Applies the rules to `token`, which would be run at absolute `position`. Returns why the
  // call ends, or nullopt if the token is to be run and generation goes on.
  std::optional<StopReason> Emit(int32_t token, int64_t position);

  // The same rules for a round's `tokens`, the first at absolute `position`, reported
  // together: the leading tokens up to the one that ends the call (a stop id not included)
  // go to `emitted`, then, if any, to `on_round`, whose stop (kCallback) ranks before a limit
  // or a full cache the same tokens reached, as with Emit. Tokens it cuts are not counted.
  std::optional<StopReason> EmitRound(absl::Span<const int32_t> tokens, int64_t position,
                                      RoundTokensCallback on_round, std::vector<int32_t>* emitted);

  int64_t generated() const { return generated_; }
  // The stop id that ended the call (kStopId), else -1.
  int32_t stop_token() const { return stop_token_; }

 private:
  static bool GoOn(int32_t) { return true; }
  bool IsStopId(int32_t token) const;
  // The token limit and the cache, for a counted token at `position`.
  std::optional<StopReason> Limits(int64_t position) const;

  absl::Span<const int32_t> stop_ids_;
  int64_t max_tokens_;
  int64_t context_size_;
  TokenCallback on_token_;
  int64_t generated_ = 0;
  int32_t stop_token_ = -1;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_STOP_RULES_H_
