#include "core/toolcall/reasoning_splitter.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "core/toolcall/reasoning_format.h"

namespace tandem::toolcall {

ReasoningSplitter::ReasoningSplitter(bool starts_in_reasoning)
    : starts_in_reasoning_(starts_in_reasoning), state_(State::kOpening) {}

ReasoningDelta ReasoningSplitter::Feed(absl::string_view text) {
  ReasoningDelta out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (state_ == State::kContent) {  // the common case once the answer runs: no scanning
      out.content.append(text.data() + i, text.size() - i);
      break;
    }
    Step(text[i], &out);
  }
  return out;
}

ReasoningDelta ReasoningSplitter::Finish() {
  ReasoningDelta out;
  if (state_ == State::kOpening) LeaveOpening(&out);
  if (state_ == State::kReasoning && tag_matched_ > 0) {
    // A "</think>" cut short is reasoning text; whitespace before the end is trimmed.
    EmitReasoning(kThinkClose.substr(0, tag_matched_), &out);
  }
  tag_matched_ = 0;
  pending_space_.clear();
  state_ = State::kDone;
  return out;
}

void ReasoningSplitter::Step(char c, ReasoningDelta* out) {
  switch (state_) {
    case State::kOpening:
      StepOpening(c, out);
      return;
    case State::kReasoning:
      StepReasoning(c, out);
      return;
    case State::kContentLead:
      if (absl::ascii_isspace(static_cast<unsigned char>(c))) return;
      state_ = State::kContent;
      out->content.push_back(c);
      return;
    case State::kContent:
      out->content.push_back(c);
      return;
    case State::kDone:
      return;
  }
}

void ReasoningSplitter::StepOpening(char c, ReasoningDelta* out) {
  held_.push_back(c);
  if (tag_matched_ == 0 && absl::ascii_isspace(static_cast<unsigned char>(c))) return;
  if (c != kThinkOpen[tag_matched_]) {
    LeaveOpening(out);
    return;
  }
  if (++tag_matched_ < kThinkOpen.size()) return;
  held_.clear();
  tag_matched_ = 0;
  state_ = State::kReasoning;
}

void ReasoningSplitter::LeaveOpening(ReasoningDelta* out) {
  std::string held = std::move(held_);
  held_.clear();
  tag_matched_ = 0;
  if (!starts_in_reasoning_) {
    state_ = State::kContent;
    out->content += held;
    return;
  }
  // At most the leading whitespace, part of "<think>" and one more byte: replayed as
  // reasoning, whose own rules drop the whitespace and find a "</think>" that began here.
  state_ = State::kReasoning;
  for (char c : held) StepReasoning(c, out);
}

void ReasoningSplitter::StepReasoning(char c, ReasoningDelta* out) {
  if (tag_matched_ > 0) {
    if (c == kThinkClose[tag_matched_]) {
      if (++tag_matched_ == kThinkClose.size()) {
        tag_matched_ = 0;
        pending_space_.clear();  // trailing whitespace of the reasoning
        state_ = State::kContentLead;
      }
      return;
    }
    // Not the tag after all: what matched is reasoning text, and `c` starts afresh ('<' is
    // the tag's only '<', so no later start of the tag lies inside the matched part).
    const size_t matched = tag_matched_;
    tag_matched_ = 0;
    EmitReasoning(kThinkClose.substr(0, matched), out);
  }
  if (c == kThinkClose[0]) {
    tag_matched_ = 1;
  } else if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
    if (reasoning_started_) pending_space_.push_back(c);  // leading whitespace is dropped
  } else {
    EmitReasoning(absl::string_view(&c, 1), out);
  }
}

void ReasoningSplitter::EmitReasoning(absl::string_view text, ReasoningDelta* out) {
  out->reasoning += pending_space_;
  pending_space_.clear();
  out->reasoning.append(text.data(), text.size());
  reasoning_started_ = true;
}

}  // namespace tandem::toolcall
