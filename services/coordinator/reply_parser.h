// A chat reply's streamed text as its client receives it: a reasoning model's reasoning
// (<think>...</think>, core/toolcall/reasoning_splitter.h) apart from the answer, and the
// answer's tool calls (core/toolcall/tool_call_parser.h, in the model's family's syntax)
// apart from its text. The reply writer feeds it the text the text stream released; the
// deltas it fills keep the invariants of both parsers (concatenated, the pieces are the
// whole reasoning, text and calls, whatever the chunking). Each call gets an id when it is
// announced: the model's own when its format writes one, else a fresh one
// (core/toolcall/tool_call_id.h).
//
// Not thread-safe: one per request.
#ifndef TANDEM_SERVICES_COORDINATOR_REPLY_PARSER_H_
#define TANDEM_SERVICES_COORDINATOR_REPLY_PARSER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/toolcall/reasoning_splitter.h"
#include "core/toolcall/tool_call_format.h"
#include "core/toolcall/tool_call_parser.h"
#include "tandem/v1/generator.pb.h"

namespace tandem {

struct ReplyParsing {
  bool split_reasoning = false;      // the model reasons in <think> blocks
  bool starts_in_reasoning = false;  // the prompt opened one
  // The family's call syntax; kNone: the text is not searched for calls.
  toolcall::ToolCallFormat tool_format = toolcall::ToolCallFormat::kNone;

  bool active() const {
    return split_reasoning || tool_format != toolcall::ToolCallFormat::kNone;
  }
};

class ReplyParser {
 public:
  explicit ReplyParser(const ReplyParsing& parsing);

  // Adds released text; sets `delta`'s text, reasoning_text and tool_calls to what became
  // certain.
  void Feed(absl::string_view text, v1::TokenDelta* delta);
  // The end of the reply: everything held back.
  void Finish(v1::TokenDelta* delta);
  // The calls made so far, whole.
  const std::vector<v1::ToolCall>& calls() const { return calls_; }

 private:
  void Content(const std::string& text, bool at_end, v1::TokenDelta* delta);
  void Calls(const toolcall::ParsedDelta& parsed, v1::TokenDelta* delta);

  toolcall::ToolCallFormat format_;
  std::optional<toolcall::ReasoningSplitter> reasoning_;
  std::unique_ptr<toolcall::ToolCallParser> tools_;
  std::vector<v1::ToolCall> calls_;
  std::mt19937_64 ids_{std::random_device{}()};  // the calls' ids
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_REPLY_PARSER_H_
