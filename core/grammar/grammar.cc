#include "core/grammar/grammar.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tandem {
namespace {

std::string ByteSetString(const ByteSet& set) {
  std::string out = "[";
  for (int b = 0; b < 256; ++b) {
    if (!set.Contains(static_cast<uint8_t>(b))) continue;
    int end = b;
    while (end + 1 < 256 && set.Contains(static_cast<uint8_t>(end + 1))) ++end;
    absl::StrAppendFormat(&out, "\\x%02X", b);
    if (end > b) absl::StrAppendFormat(&out, "-\\x%02X", end);
    b = end;
  }
  return out + "]";
}

}  // namespace

std::string Grammar::DebugString() const {
  std::string out;
  for (size_t r = 0; r < rules.size(); ++r) {
    absl::StrAppend(&out, rule_names[r], "#", r, " ::=");
    for (size_t a = 0; a < rules[r].size(); ++a) {
      if (a > 0) out += " |";
      for (int32_t pos = rules[r][a]; code[pos] != kEndOfAlternative; ++pos) {
        const int32_t el = code[pos];
        if (IsRuleRef(el)) {
          absl::StrAppend(&out, " ", rule_names[el], "#", el);
        } else {
          absl::StrAppend(&out, " ", ByteSetString(byte_sets[ByteSetIndex(el)]));
        }
      }
      if (code[rules[r][a]] == kEndOfAlternative) out += " \"\"";
    }
    out += "\n";
  }
  return out;
}

}  // namespace tandem
