// OpenAI's /v1/chat/completions and /v1/completions request bodies turned into the same
// tandem.v1.GenerateRequest a gRPC client sends (the HTTP handler then calls the same
// Coordinator::Generate): no second generation path, and every check on the values
// themselves (ranges, limits, the context) stays where the gRPC path has it.
//
// Accepted: model, messages (chat: role, content as a string or text parts, name) or prompt
// (completions: a string or token ids, or a one-element list of either), max_tokens,
// max_completion_tokens (chat), temperature, top_p, seed (>= 0), stop (a string or a list),
// stream, stream_options.include_usage, n >= 1 (choices; at most the coordinator's
// --max-choices, which it checks), user (ignored); presence_penalty,
// frequency_penalty only as 0; logprobs (chat: a bool, with top_logprobs 0..20, which
// needs logprobs true; completions: 0..20 alternatives, asking for the chosen tokens' too),
// logit_bias only empty, echo only false, best_of only 1; response_format (text,
// json_object, json_schema: openai_constraint.h). Tandem's own: top_k, min_p,
// repetition_penalty, speculation {enabled, draft_tokens, adaptive, method
// "draft_model"|"ngram", coupling "standard"|"gumbel", pipelined}, session_id, ignore_eos,
// grammar and regex (openai_constraint.h). An unset (or null) sampling field takes Tandem's
// default (tandem.v1.SamplingParams), not OpenAI's.
//
// Anything else is kInvalidArgument naming the field: malformed JSON (with line and column),
// a wrong type, an unknown field, a batch, best_of > 1, a refused feature (said to be
// unsupported).
//
// Thread-safe (no state).
#ifndef TANDEM_SERVICES_COORDINATOR_OPENAI_REQUEST_H_
#define TANDEM_SERVICES_COORDINATOR_OPENAI_REQUEST_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

enum class OpenAiEndpoint { kChatCompletions, kCompletions };

struct OpenAiRequest {
  OpenAiEndpoint endpoint = OpenAiEndpoint::kChatCompletions;
  std::string model;  // as the client named it (the handler checks it)
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  v1::GenerateRequest generate;
};

// Parses and converts one request body (JSON nested at most 64 deep).
absl::StatusOr<OpenAiRequest> ParseOpenAiRequest(absl::string_view body, OpenAiEndpoint endpoint);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_OPENAI_REQUEST_H_
