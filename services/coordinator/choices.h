// Several choices (replies) for one prompt: GenerateRequest.n > 1 (issue #30). Each choice is
// a generation of its own — a one-off request with its own seed, run by the same single-request
// path as any other (`generate`: Coordinator's) — and the choices share what the workers share
// anyway: the prompt's fully written 16-token KV blocks, keyed by the chain hash of their
// tokens (core/decoder/kv_block_pool.h). So that the prompt is prefilled once, choice 0 starts
// alone and the others start when its first message comes (its prefill is done and its blocks
// published) or it ends; they then adopt its blocks and decode side by side, batched together
// by the workers' batch scheduler.
//
// - Seeds: choice 0 uses the request's seed (the request's, or `fresh_seed` when it sets none),
//   so n = 1 and choice 0 of n > 1 give the same reply; choice i > 0 uses ChoiceSeed(seed, i).
// - Every message goes out with its choice_index, one at a time (the `write` of the caller is
//   never called from two threads at once); messages of different choices interleave.
// - The final message of the last choice to end also carries request_usage: the prompt
//   counted once (choice 0's prompt_tokens and cached_prompt_tokens) and the generated tokens
//   (and the prediction counts) summed over the choices.
// - Admission: each choice is a request of its own to the admission queue (n choices count as
//   n requests against the targets' sessions and KV budgets).
// - Errors: the first choice to fail ends the request with its error, and the others are
//   cancelled; a client that goes away (`cancelled`, or a failed write) cancels every choice.
//
// Thread-safe plain functions; GenerateChoices runs choice 0 on the caller's thread and each
// other choice on a thread of its own, all joined before it returns.
#ifndef TANDEM_SERVICES_COORDINATOR_CHOICES_H_
#define TANDEM_SERVICES_COORDINATOR_CHOICES_H_

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "services/coordinator/request_limits.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

// The seed of choice `index` of a request seeded `seed`: `seed` itself for choice 0, else
// SplitMix64's finalizer of seed + index * 0x9E3779B97F4A7C15 (golden-ratio increments, as
// SplitMix64 steps its state): distinct, well-mixed seeds for nearby request seeds.
uint64_t ChoiceSeed(uint64_t seed, int32_t index);

// The choices a request asks for: max(1, n).
int32_t ChoiceCount(const v1::GenerateRequest& request);

// kInvalidArgument naming `n` when n < 0, n > limits.max_choices, or n > 1 with a session_id.
absl::Status CheckChoices(const v1::GenerateRequest& request, const RequestLimits& limits);

using ChoiceWrite = std::function<bool(const v1::GenerateResponse&)>;
using ChoiceCancelled = std::function<bool()>;
// Runs one single-choice request (Coordinator's own Generate path).
using GenerateOneChoice =
    std::function<absl::Status(const v1::GenerateRequest& request, const ChoiceWrite& write,
                               const ChoiceCancelled& cancelled)>;

// Runs the request's ChoiceCount(request) choices as the comment above says, each through
// `generate` with n cleared and its own seed. The request was checked with CheckChoices.
absl::Status GenerateChoices(const v1::GenerateRequest& request, uint64_t fresh_seed,
                             const GenerateOneChoice& generate, const ChoiceWrite& write,
                             const ChoiceCancelled& cancelled);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_CHOICES_H_
