#include "core/chat/family_format.h"

#include <initializer_list>

namespace tandem::chat {

std::optional<std::string> FamilyFormatName(absl::FunctionRef<bool(absl::string_view)> has_token) {
  struct Family {
    const char* format;
    std::initializer_list<absl::string_view> tokens;
  };
  static const Family kFamilies[] = {
      {"llama3", {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}},
      {"chatml", {"<|im_start|>", "<|im_end|>"}},
      {"gemma", {"<start_of_turn>", "<end_of_turn>"}},
      {"phi3", {"<|user|>", "<|assistant|>", "<|end|>"}},
  };
  for (const Family& family : kFamilies) {
    bool all = true;
    for (absl::string_view token : family.tokens) all = all && has_token(token);
    if (all) return std::string(family.format);
  }
  return std::nullopt;
}

}  // namespace tandem::chat
