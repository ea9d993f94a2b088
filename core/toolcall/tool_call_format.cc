#include "core/toolcall/tool_call_format.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tandem::toolcall {

absl::string_view ToolCallFormatName(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kNone: return "none";
    case ToolCallFormat::kLlama3Json: return "llama3_json";
    case ToolCallFormat::kHermes: return "hermes";
    case ToolCallFormat::kMistral: return "mistral";
    case ToolCallFormat::kFunctionaryV31: return "functionary_v3.1";
    case ToolCallFormat::kFunctionaryV32: return "functionary_v3.2";
    case ToolCallFormat::kFirefunctionV2: return "firefunction_v2";
    case ToolCallFormat::kCommandR: return "command_r";
    case ToolCallFormat::kDeepSeekR1: return "deepseek_r1";
  }
  return "none";
}

std::vector<ToolCallFormat> AllToolCallFormats() {
  return {ToolCallFormat::kLlama3Json,      ToolCallFormat::kHermes,
          ToolCallFormat::kMistral,         ToolCallFormat::kFunctionaryV31,
          ToolCallFormat::kFunctionaryV32,  ToolCallFormat::kFirefunctionV2,
          ToolCallFormat::kCommandR,        ToolCallFormat::kDeepSeekR1};
}

absl::StatusOr<ToolCallFormat> ParseToolCallFormatName(absl::string_view name) {
  std::vector<std::string> known = {"none"};
  for (ToolCallFormat f : AllToolCallFormats()) {
    if (ToolCallFormatName(f) == name) return f;
    known.emplace_back(ToolCallFormatName(f));
  }
  if (name == "none") return ToolCallFormat::kNone;
  return absl::InvalidArgumentError(absl::StrCat("unknown tool-call format '", name,
                                                 "'; known: ", absl::StrJoin(known, ", ")));
}

}  // namespace tandem::toolcall
