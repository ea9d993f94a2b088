// A GenerateRequest checked and converted before any worker does anything, the way TGI's
// router validates before it schedules: every limit, every default the coordinator fills in
// and every conversion from the proto, in one place. What it returns is what the rounds run
// with; Coordinator::Generate then only admits, finds the session and runs.
//
// Checks, in this order (the first failure is the answer): the size limits
// (request_limits.h: kInvalidArgument, or kOutOfRange for more token ids than the context);
// the sampling settings (ValidateSamplerConfig); max_tokens >= 0; speculation.draft_tokens in
// [0, 16]; the logprobs fields (delta_logprobs.h); speculation.method and coupling known
// values; the constraint's shape (a kind this build knows; a schema or grammar not empty: it
// is compiled later, by the coordinator, which names what is wrong inside); then the prompt: non-empty, token ids inside the vocabulary, and what the tokenizer
// makes of a text or chat (its own errors as they come). All kInvalidArgument naming the
// field unless said otherwise.
//
// A prediction's text is tokenized after the prompt (no special tokens); its token ids must be
// inside the vocabulary.
//
// Thread-compatible plain function; `tokenize` is called at most twice (the prompt, the
// prediction), on the caller's thread.
#ifndef TANDEM_SERVICES_COORDINATOR_VALIDATED_REQUEST_H_
#define TANDEM_SERVICES_COORDINATOR_VALIDATED_REQUEST_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/grammar/constraint_spec.h"
#include "services/coordinator/output_syntax.h"
#include "services/coordinator/reply_parser.h"
#include "services/coordinator/request_limits.h"
#include "services/coordinator/round_params.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

// What the coordinator's options and the target's model set for every request.
struct GenerateSettings {
  RequestLimits limits;
  int32_t vocab_size = 0;                // the target's
  std::vector<int32_t> end_of_turn_ids;  // stop tokens unless the request ignores EOS
  int32_t default_max_tokens = 0;        // CoordinatorOptions'
  int32_t default_draft_tokens = 0;
  bool adaptive_draft = false;
  int32_t continue_tokens = 0;
  bool ngram_fallback = false;
  OutputSyntax syntax;  // how the model writes tool calls and reasoning
};

struct ValidatedRequest {
  // All but the deadlines, which wait for the session's replicas (Coordinator::Deadlines).
  RoundParams rounds;
  std::vector<std::string> stop_strings;
  // What the output must match (kNone: nothing), not compiled yet: the request's own, or
  // the one its tools force (reply_syntax.h).
  ConstraintSpec constraint;
  // What the reply's text is parsed into (reasoning, tool calls).
  ReplyParsing parsing;
};

// Tokenizes a text or chat prompt (Coordinator::Tokenize).
using PromptTokenizer =
    std::function<absl::StatusOr<v1::TokenizeResponse>(const v1::TokenizeRequest& request)>;

// An unset sampling seed takes `fresh_seed` (the caller's random one).
absl::StatusOr<ValidatedRequest> ValidateGenerateRequest(const v1::GenerateRequest& request,
                                                         const GenerateSettings& settings,
                                                         uint64_t fresh_seed,
                                                         const PromptTokenizer& tokenize);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_VALIDATED_REQUEST_H_
