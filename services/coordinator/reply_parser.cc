#include "services/coordinator/reply_parser.h"

#include <utility>

#include "absl/random/bit_gen_ref.h"
#include "core/toolcall/tool_call_id.h"

namespace tandem {

ReplyParser::ReplyParser(const ReplyParsing& parsing) : format_(parsing.tool_format) {
  if (parsing.split_reasoning) reasoning_.emplace(parsing.starts_in_reasoning);
  if (format_ != toolcall::ToolCallFormat::kNone) {
    absl::StatusOr<std::unique_ptr<toolcall::ToolCallParser>> parser =
        toolcall::NewToolCallParser(format_);
    if (parser.ok()) tools_ = *std::move(parser);  // kNone is the only format without one
  }
}

void ReplyParser::Feed(absl::string_view text, v1::TokenDelta* delta) {
  if (!reasoning_.has_value()) {
    Content(std::string(text), /*at_end=*/false, delta);
    return;
  }
  toolcall::ReasoningDelta split = reasoning_->Feed(text);
  *delta->mutable_reasoning_text() += split.reasoning;
  Content(split.content, /*at_end=*/false, delta);
}

void ReplyParser::Finish(v1::TokenDelta* delta) {
  if (reasoning_.has_value()) {
    toolcall::ReasoningDelta split = reasoning_->Finish();
    *delta->mutable_reasoning_text() += split.reasoning;
    Content(split.content, /*at_end=*/true, delta);
    return;
  }
  Content("", /*at_end=*/true, delta);
}

void ReplyParser::Content(const std::string& text, bool at_end, v1::TokenDelta* delta) {
  if (tools_ == nullptr) {
    *delta->mutable_text() += text;
    return;
  }
  toolcall::ParsedDelta parsed = tools_->Feed(text);
  if (at_end) {
    toolcall::ParsedDelta rest = tools_->Finish();
    parsed.content += rest.content;
    for (toolcall::ToolCallDelta& call : rest.calls) parsed.calls.push_back(std::move(call));
  }
  *delta->mutable_text() += parsed.content;
  Calls(parsed, delta);
}

void ReplyParser::Calls(const toolcall::ParsedDelta& parsed, v1::TokenDelta* delta) {
  for (const toolcall::ToolCallDelta& piece : parsed.calls) {
    if (piece.index < 0 || piece.index > static_cast<int>(calls_.size())) continue;
    v1::ToolCallDelta* out = delta->add_tool_calls();
    out->set_index(piece.index);
    if (piece.index == static_cast<int>(calls_.size())) {  // announced: id and name
      v1::ToolCall& call = calls_.emplace_back();
      call.set_id(piece.id.empty() ? toolcall::NewToolCallId(format_, absl::BitGenRef(ids_)) : piece.id);
      call.set_name(piece.name);
      out->set_id(call.id());
      out->set_name(call.name());
    }
    *calls_[piece.index].mutable_arguments() += piece.arguments;
    out->set_arguments(piece.arguments);
  }
}

}  // namespace tandem
