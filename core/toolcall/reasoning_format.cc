#include "core/toolcall/reasoning_format.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tandem::toolcall {

absl::string_view ReasoningFormatName(ReasoningFormat format) {
  switch (format) {
    case ReasoningFormat::kNone: return "none";
    case ReasoningFormat::kThinkTags: return "think";
  }
  return "none";
}

absl::StatusOr<ReasoningFormat> ParseReasoningFormatName(absl::string_view name) {
  for (ReasoningFormat f : {ReasoningFormat::kNone, ReasoningFormat::kThinkTags}) {
    if (ReasoningFormatName(f) == name) return f;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown reasoning format '", name, "'; known: none, think"));
}

ReasoningFormat DetectReasoningFormat(absl::string_view template_source,
                                      absl::FunctionRef<bool(absl::string_view)> has_token) {
  // "</think>" contains no "<think>": look for both (a template may only strip old reasoning).
  if (absl::StrContains(template_source, kThinkOpen) ||
      absl::StrContains(template_source, kThinkClose) || has_token(kThinkOpen) ||
      has_token(kThinkClose)) {
    return ReasoningFormat::kThinkTags;
  }
  return ReasoningFormat::kNone;
}

bool PromptOpensReasoning(absl::string_view rendered_prompt) {
  const absl::string_view trimmed = absl::StripTrailingAsciiWhitespace(rendered_prompt);
  return absl::EndsWith(trimmed, kThinkOpen);
}

}  // namespace tandem::toolcall
