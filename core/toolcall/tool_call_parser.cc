#include "core/toolcall/tool_call_parser.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/toolcall/call_syntax.h"
#include "core/toolcall/delta_builder.h"

namespace tandem::toolcall {
namespace {

// Plain text until one of the family's markers, then the family's call syntax until it ends
// or breaks, then text again. Fed a byte at a time, so the result cannot depend on the
// chunking; the only look-ahead is a marker's prefix, held back in `partial_`.
class StreamingToolCallParser : public ToolCallParser {
 public:
  explicit StreamingToolCallParser(std::unique_ptr<CallSyntax> syntax)
      : syntax_(std::move(syntax)) {
    if (syntax_->starts_in_syntax()) Enter(-1, "");
  }

  ParsedDelta Feed(absl::string_view text) override {
    for (char c : text) Step(c);
    return out_.Take();
  }

  ParsedDelta Finish() override {
    if (in_syntax_) {
      Leave(/*release=*/true);
    }
    out_.Content(partial_);
    partial_.clear();
    out_.FinishContent();
    return out_.Take();
  }

 private:
  void Enter(int marker, absl::string_view marker_text) {
    in_syntax_ = true;
    out_.StartHolding(marker_text);
    syntax_->Begin(marker, out_);
  }

  // Back to text: what is still held is content (`release`, and only if no call took it).
  void Leave(bool release) {
    in_syntax_ = false;
    if (release && out_.holding()) {
      out_.ReleaseHeld();
    } else {
      out_.DropHeld();
    }
  }

  void Step(char c) {
    if (in_syntax_) {
      switch (syntax_->Step(c, out_)) {
        case ScanResult::kConsumed:
          out_.Hold(c);
          return;
        case ScanResult::kDone:
          Leave(/*release=*/false);
          return;
        case ScanResult::kDoneBefore:
          Leave(/*release=*/false);
          break;
        case ScanResult::kFail:
          Leave(/*release=*/true);
          break;
      }
    }
    TextStep(c);
  }

  void TextStep(char c) {
    partial_.push_back(c);
    while (!partial_.empty()) {
      const std::vector<CallMarker>& markers = syntax_->markers();
      bool prefix = false;
      for (size_t i = 0; i < markers.size(); ++i) {
        if (partial_ == markers[i].text) {
          partial_.clear();
          if (!markers[i].drop) Enter(static_cast<int>(i), markers[i].text);
          return;
        }
        prefix = prefix || absl::StartsWith(markers[i].text, partial_);
      }
      if (prefix) return;
      out_.Content(partial_[0]);
      partial_.erase(0, 1);
    }
  }

  std::unique_ptr<CallSyntax> syntax_;
  DeltaBuilder out_;
  bool in_syntax_ = false;
  std::string partial_;  // a prefix of a marker, held back
};

}  // namespace

absl::StatusOr<std::unique_ptr<ToolCallParser>> NewToolCallParser(ToolCallFormat format) {
  std::unique_ptr<CallSyntax> syntax = NewCallSyntax(format);
  if (syntax == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("tool-call format '", ToolCallFormatName(format),
                                                   "' has no call syntax to parse"));
  }
  return std::make_unique<StreamingToolCallParser>(std::move(syntax));
}

void AppendParsedDelta(const ParsedDelta& delta, ParsedMessage& message) {
  message.content += delta.content;
  for (const ToolCallDelta& call : delta.calls) {
    if (call.index < 0) continue;
    const size_t index = static_cast<size_t>(call.index);
    if (index >= message.calls.size()) {
      message.calls.resize(index + 1);
      message.calls[index].name = call.name;
    }
    ToolCall& target = message.calls[index];
    target.arguments += call.arguments;
    if (!call.id.empty()) target.id = call.id;
  }
}

ParsedMessage ParseToolCalls(ToolCallFormat format, absl::string_view text) {
  ParsedMessage message;
  absl::StatusOr<std::unique_ptr<ToolCallParser>> parser = NewToolCallParser(format);
  if (!parser.ok()) {
    message.content = std::string(text);
    return message;
  }
  AppendParsedDelta((*parser)->Feed(text), message);
  AppendParsedDelta((*parser)->Finish(), message);
  return message;
}

}  // namespace tandem::toolcall
