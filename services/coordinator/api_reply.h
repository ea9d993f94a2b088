// What one HTTP API (OpenAI's chat and text completions, Anthropic's Messages, OpenAI's
// Responses) makes of a Generate run: the whole JSON body of a reply that was not streamed, or the
// Server-Sent Events of one that is. The HTTP server runs every API's request through the
// same Coordinator::Generate and hands what comes back to the request's ApiReply; the JSON
// shapes are the ApiReply's alone (openai_api_reply.h, anthropic_response.h,
// responses_response.h).
//
// Not thread-safe: one per request, used by the handler thread that runs it.
#ifndef TANDEM_SERVICES_COORDINATOR_API_REPLY_H_
#define TANDEM_SERVICES_COORDINATOR_API_REPLY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "services/coordinator/http_error.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

// The reply of a run that was not streamed (one choice of it: GenerateRequest.n), gathered
// from its messages.
struct CollectedReply {
  std::string text;                                                // the deltas' text, joined
  std::string reasoning;                                           // their reasoning_text, joined
  v1::GenerationResult result;
  google::protobuf::RepeatedPtrField<v1::TokenLogprobs> logprobs;  // theirs, in order
};

// Adds `message` to the choice it belongs to: choices[message.choice_index()], ignored when
// that is outside `choices` (one per choice the request asked for).
void Collect(const v1::GenerateResponse& message, std::vector<CollectedReply>& choices);

class ApiReply {
 public:
  virtual ~ApiReply() = default;

  // The JSON body of a reply that was not streamed.
  virtual std::string Complete(const CollectedReply& reply) = 0;
  // The JSON body of a reply of one or more choices (`choices[i]` is choice i's, i =
  // GenerateResponse.choice_index). Only OpenAI's APIs ask for several (`n`); by default,
  // choice 0's reply.
  virtual std::string CompleteChoices(const std::vector<CollectedReply>& choices) {
    return Complete(choices.front());
  }
  // The SSE events (framed, "event: ...\ndata: ...\n\n") one message of the run becomes; the
  // first call also opens the stream, a message with `final` also closes it (with several
  // choices, the last choice's final).
  virtual std::vector<std::string> Events(const v1::GenerateResponse& message) = 0;
  // What ends a stream whose run succeeded, after the final message's events (OpenAI's
  // "data: [DONE]"; nothing for the APIs whose last event says it).
  virtual std::string StreamEnd() { return ""; }
  // The SSE event telling a streaming client the run failed after the stream started.
  virtual std::string StreamError(const HttpError& error) = 0;
  // The JSON body of an error answered before anything was streamed.
  virtual std::string ErrorBody(const HttpError& error) const = 0;
  // A run's error as this API tells its client about it (OpenAI's names the body's field as
  // error.param); the status as it is by default.
  virtual absl::Status ForClient(absl::Status status) const { return status; }
};

// One SSE event: "event: NAME\ndata: DATA\n\n" ("data: DATA\n\n" when `name` is empty).
std::string SseEvent(absl::string_view name, absl::string_view data);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_API_REPLY_H_
