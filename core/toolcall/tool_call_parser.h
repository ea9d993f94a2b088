// Splits a model's output into content and tool calls, per family (tool_call_format.h), as it
// streams: each Feed returns what became certain, so a server can send OpenAI's deltas
// (content; per call its index, id and name first, then argument fragments).
//
//   ASSIGN_OR_RETURN(std::unique_ptr<ToolCallParser> parser, NewToolCallParser(format));
//   for (...) Send(parser->Feed(text_of_new_tokens));
//   Send(parser->Finish());
//
// What the parser guarantees (tool_call_parser_test.cc and the fuzzer hold it to this):
//  - the result does not depend on how the text is split: the deltas of any chunking
//    reassemble to ParseToolCalls of the whole text;
//  - concatenated content deltas are the final content; per call, concatenated argument
//    deltas are its final `arguments`: the arguments JSON value as the model wrote it,
//    surrounding whitespace trimmed ("{}" when the call has none);
//  - text that may still become a call marker is held back until it cannot; a call is
//    announced once its name is known and its arguments begin, and stays a call from then on
//    (output that ends inside it leaves its arguments incomplete); a call that breaks before
//    that is content, marker included; text after the point where an announced call's syntax
//    breaks is read as text again;
//  - text before, between and after calls stays content, except whitespace next to a call;
//  - arguments nested deeper than JsonValueScanner::kMaxDepth are malformed.
// Parallel calls are read in each family's own way (repeated blocks, JSON arrays, ";").
// A model id written after the arguments (Mistral) comes in a later delta of the same call
// with only `id` (and perhaps arguments) set; a front that already sent an id keeps its own.
//
// A parser is used by one thread at a time.
#ifndef TANDEM_CORE_TOOLCALL_TOOL_CALL_PARSER_H_
#define TANDEM_CORE_TOOLCALL_TOOL_CALL_PARSER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/toolcall/tool_call.h"
#include "core/toolcall/tool_call_format.h"

namespace tandem::toolcall {

// One step of a call as it streams: the first delta of call `index` carries its name (and the
// model's id if the family writes one); later ones only argument text.
struct ToolCallDelta {
  int index = 0;
  std::string id;
  std::string name;
  std::string arguments;
};

// What became certain since the last step.
struct ParsedDelta {
  std::string content;
  std::vector<ToolCallDelta> calls;
};

class ToolCallParser {
 public:
  virtual ~ToolCallParser() = default;
  // `text`: the next generated text (whole UTF-8 characters; special tokens appear as their
  // text, e.g. "[TOOL_CALLS]", "<|python_tag|>").
  virtual ParsedDelta Feed(absl::string_view text) = 0;
  // End of output: everything still held back (a call that never completed or does not parse
  // becomes content).
  virtual ParsedDelta Finish() = 0;
};

// kInvalidArgument for kNone.
absl::StatusOr<std::unique_ptr<ToolCallParser>> NewToolCallParser(ToolCallFormat format);

// The whole output at once (the non-streamed response); the same result as Feed(all) +
// Finish() reassembled. kNone: all content.
struct ParsedMessage {
  std::string content;
  std::vector<ToolCall> calls;
};
ParsedMessage ParseToolCalls(ToolCallFormat format, absl::string_view text);

// Folds `delta` into `message` (content appended; a call's first delta adds it, later ones
// extend its arguments and set a late id). What ParseToolCalls does; for callers that
// collect a stream.
void AppendParsedDelta(const ParsedDelta& delta, ParsedMessage& message);

}  // namespace tandem::toolcall

#endif  // TANDEM_CORE_TOOLCALL_TOOL_CALL_PARSER_H_
