// Size limits on what a client may send, checked before any work (no tokenizer run, no worker
// call): a prompt that can never be served is refused in microseconds, and no field of
// unbounded size reaches a worker, a log line or an error message.
//
// Every violation is kInvalidArgument naming the field and the limit; a prompt of more token
// ids than the context is kOutOfRange. The gRPC server's receive limit
// (--max-message-bytes) bounds the whole message before any of these run.
#ifndef TANDEM_SERVICES_COORDINATOR_REQUEST_LIMITS_H_
#define TANDEM_SERVICES_COORDINATOR_REQUEST_LIMITS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/grammar/tool_call_spec.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

struct RequestLimits {
  int64_t max_prompt_bytes = 1 << 20;  // text, or a chat's messages together (--max-prompt-bytes)
  int64_t max_prompt_tokens = 0;       // token_ids; 0: no limit (the coordinator: the context)
  int max_chat_messages = 1024;
  int max_session_id_bytes = 128;
  int max_stop_strings = 16;
  int max_stop_string_bytes = 256;
  int max_stop_token_ids = 256;
  int max_format_bytes = 64;  // chat.format, a built-in format name
  // A constraint's text: a JSON Schema, a GBNF grammar or a regex (Constraint).
  int64_t max_constraint_bytes = 1 << 20;
  // Tools a chat request offers (the tool-call grammar's own bound: kMaxToolCallTools); their
  // names, descriptions and schemas together are bounded as a constraint's text.
  int max_tools = static_cast<int>(kMaxToolCallTools);
  // A prediction (GenerateRequest.prediction): its text counts against max_prompt_bytes on its
  // own; its token ids against this.
  int max_prediction_tokens = 1 << 16;
  // --- #30 n choices ---
  // Choices one request may ask for (GenerateRequest.n; --max-choices): checked by
  // CheckChoices (choices.h), kInvalidArgument naming `n`.
  int max_choices = 8;
  // --- end ---
  // --- #30 embeddings ---
  int max_embed_inputs = 2048;        // EmbedRequest.inputs
  int64_t max_embed_tokens = 65536;   // EmbedRequest: token ids (and, after tokenizing, tokens)
                                      // of all inputs together; texts: max_prompt_bytes each
  // --- #30 sampling ---
  int max_logit_bias = 1024;  // sampling.logit_bias entries (each costs every sampled position)
  // --- end ---
};

absl::Status CheckGenerateLimits(const v1::GenerateRequest& request, const RequestLimits& limits);
absl::Status CheckTokenizeLimits(const v1::TokenizeRequest& request, const RequestLimits& limits);
// --- #30 embeddings ---
// Inputs over max_embed_inputs, a text over max_prompt_bytes or token ids over max_embed_tokens
// in all: kInvalidArgument naming the input's index and the limit.
absl::Status CheckEmbedLimits(const v1::EmbedRequest& request, const RequestLimits& limits);
// --- end ---
// For CloseSession and Generate's session_id.
absl::Status CheckSessionIdLimit(const std::string& session_id, const RequestLimits& limits);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_REQUEST_LIMITS_H_
