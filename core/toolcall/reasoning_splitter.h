// Splits a model's streamed output into its reasoning and its answer (ReasoningFormat
// kThinkTags), as llama-server returns reasoning_content:
//
//   [whitespace] <think> reasoning </think> [whitespace] content
//
//  - The output may open with "<think>" after leading whitespace; the reasoning runs to the
//    first "</think>", and the rest, its leading whitespace dropped, is content.
//  - The reasoning is trimmed of the whitespace (the newlines) after "<think>" and before
//    "</think>". (vLLM's parsers keep it; llama-server strips it, and so do we.)
//  - An output that does not open with "<think>" is all content, verbatim; started inside the
//    reasoning (the prompt opened the block: PromptOpensReasoning), it is reasoning up to
//    "</think>", a repeated opening "<think>" dropped.
//  - A reasoning still open at the end stays reasoning.
//  - Text that may still be the start of a tag, and whitespace that may still be trimmed, is
//    held back until the next Feed decides it (or Finish).
// So every way of cutting the same output into Feed calls gives the same reasoning and content
// once the deltas are concatenated.
//
//   ReasoningSplitter splitter(PromptOpensReasoning(prompt));
//   for (chunk : stream) { ReasoningDelta d = splitter.Feed(chunk); send(d); }
//   send(splitter.Finish());
//
// Not thread-safe: one splitter per output stream, used by one thread at a time.
#ifndef TANDEM_CORE_TOOLCALL_REASONING_SPLITTER_H_
#define TANDEM_CORE_TOOLCALL_REASONING_SPLITTER_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace tandem::toolcall {

// What one Feed or Finish adds to the reasoning and to the content (either may be empty).
struct ReasoningDelta {
  std::string reasoning;
  std::string content;

  bool empty() const { return reasoning.empty() && content.empty(); }
};

class ReasoningSplitter {
 public:
  // `starts_in_reasoning`: the prompt ended inside an open <think> block.
  explicit ReasoningSplitter(bool starts_in_reasoning);

  // The next piece of output (any bytes; tags are matched bytewise).
  ReasoningDelta Feed(absl::string_view text);
  // The end of the output: releases what was held back. Later calls return empty deltas.
  ReasoningDelta Finish();

  // True once the reasoning is over (closed by "</think>", or the output did not open one):
  // everything from here on is content. A constraint on the answer starts here.
  bool reasoning_done() const {
    return state_ == State::kContentLead || state_ == State::kContent || state_ == State::kDone;
  }

 private:
  enum class State {
    kOpening,      // before the first non-whitespace: "<think>" may come
    kReasoning,    // inside the block
    kContentLead,  // after "</think>": whitespace is dropped
    kContent,      // verbatim
    kDone,         // after Finish
  };

  void Step(char c, ReasoningDelta* out);
  void StepOpening(char c, ReasoningDelta* out);
  void StepReasoning(char c, ReasoningDelta* out);
  // Leaves kOpening without a "<think>": replays the held text in the next state.
  void LeaveOpening(ReasoningDelta* out);
  // Appends held whitespace and `text` to the reasoning (leading whitespace dropped).
  void EmitReasoning(absl::string_view text, ReasoningDelta* out);

  const bool starts_in_reasoning_;
  State state_;
  std::string held_;           // kOpening: the whitespace and partial "<think>" seen so far
  size_t tag_matched_ = 0;     // bytes of the tag (kOpening: "<think>"; kReasoning: "</think>")
  std::string pending_space_;  // kReasoning: whitespace that only later text can keep
  bool reasoning_started_ = false;  // kReasoning: some reasoning was emitted
};

}  // namespace tandem::toolcall

#endif  // TANDEM_CORE_TOOLCALL_REASONING_SPLITTER_H_
