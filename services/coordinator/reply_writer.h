// What the client of one Generate request receives, whichever front it came through (gRPC's
// generator_service.h and HTTP's generate_run.h both read Coordinator::Generate's writes):
// each round's tokens as a streamed delta — token ids, the text with stop strings cut
// (text_stream.h) and, when asked, their logprobs — then the rest of the text and the final
// message with usage, timing, speculation statistics, session and seed. A chat reply of a
// reasoning model, or one with tools, has its text parsed (reply_parser.h): the deltas carry
// the reasoning and the tool calls apart from the text, and the final message the calls.
//
// Metrics: time_to_first_token, inter_token_latency and generated_tokens as deltas go out;
// prompt, cached prompt, draft and acceptance counters with the final message.
//
// Not thread-safe: one per request, used on the request's thread.
#ifndef TANDEM_SERVICES_COORDINATOR_REPLY_WRITER_H_
#define TANDEM_SERVICES_COORDINATOR_REPLY_WRITER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "services/coordinator/reply_parser.h"
#include "services/coordinator/round_loop.h"
#include "services/coordinator/text_stream.h"
#include "tandem/v1/generator.pb.h"
#include "tandem/v1/worker.pb.h"
#include "wire/metrics.h"

namespace tandem {

class ReplyWriter {
 public:
  using Clock = std::chrono::steady_clock;
  using Write = std::function<bool(const v1::GenerateResponse&)>;

  struct Options {
    const std::vector<std::string>* token_bytes = nullptr;  // the target's vocabulary
    std::vector<std::string> stop_strings;
    bool logprobs = false;    // each round's verdict carries one entry per token
    Clock::time_point start;  // when the request arrived: the first token's time counts from it
    // What the text is parsed into (reasoning, tool calls: reply_parser.h), and the token
    // bytes it is then decoded with (control tokens as their text: output_syntax.h).
    ReplyParsing parsing;
    const std::vector<std::string>* parse_token_bytes = nullptr;
  };

  // `write` and `cancelled` (Coordinator::Generate's) and `metrics` must outlive the writer.
  ReplyWriter(Options options, const Write& write, const std::function<bool()>& cancelled,
              CoordinatorMetrics* metrics);

  // The round's verify answer, whose logprobs the next Tokens sends (RoundObserver::verified).
  void Verified(const v1::VerifyResult& verdict) { verdict_ = &verdict; }
  // Streams a round's tokens (a RoundCallback): cuts `tokens` after one that completed a stop
  // string; false once a stop string was seen or the client went away.
  bool Tokens(std::vector<int32_t>& tokens);
  // Whether a write failed or `cancelled` said so: the request ends kCancelled.
  bool client_gone() const { return client_gone_; }
  // Sends the text held back, then the final message.
  void Finish(const RoundOutcome& outcome, const std::string& session_id, uint64_t seed);

 private:
  void ObserveTokens(size_t count);
  // Sets `delta`'s text (and, when parsing, its reasoning and tool calls) from released text.
  void AddText(const std::string& text, v1::TokenDelta* delta);
  v1::GenerateResponse Final(const RoundOutcome& outcome, const std::string& session_id,
                             uint64_t seed) const;
  void CountOutcome(const RoundOutcome& outcome);

  const std::vector<std::string>& token_bytes_;
  const bool logprobs_;
  const Clock::time_point start_;
  const Write& write_;
  const std::function<bool()>& cancelled_;
  CoordinatorMetrics* metrics_;
  TextStream text_;
  std::optional<ReplyParser> parser_;  // unset: the text goes out as it is
  const v1::VerifyResult* verdict_ = nullptr;  // the current round's
  double first_token_ = -1;                    // seconds from start_; -1: none yet
  Clock::time_point last_token_;
  bool client_gone_ = false;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_REPLY_WRITER_H_
