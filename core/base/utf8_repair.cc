#include "core/base/utf8_repair.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace tandem::utf8 {
namespace {

// What a byte announces: the length of the sequence it leads (0: it cannot lead one) and
// the range of the byte after it. The second byte's range is narrowed after E0 (overlongs),
// ED (surrogates), F0 (overlongs) and F4 (past U+10FFFF) — Unicode's table 3-7; every later
// byte is 80..BF.
struct Lead {
  size_t length;
  uint8_t low;
  uint8_t high;
};

Lead LeadOf(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b < 0xC2) return {0, 0, 0};  // a continuation byte, or C0/C1 (always overlong)
  if (b < 0xE0) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b < 0xF0) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b < 0xF4) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};  // F5..FF never occur in UTF-8
}

enum class Kind { kCharacter, kInvalid, kIncomplete };

struct Step {
  Kind kind;
  size_t length;  // bytes of the character, of the maximal subpart, or of the valid prefix
};

// What starts at text[pos]: a whole character, an ill-formed maximal subpart (one U+FFFD),
// or a valid prefix that runs into the end of `text`.
Step Next(absl::string_view text, size_t pos) {
  const Lead lead = LeadOf(static_cast<uint8_t>(text[pos]));
  if (lead.length == 0) return {Kind::kInvalid, 1};
  for (size_t i = 1; i < lead.length; ++i) {
    if (pos + i == text.size()) return {Kind::kIncomplete, i};
    const uint8_t b = static_cast<uint8_t>(text[pos + i]);
    const uint8_t low = i == 1 ? lead.low : 0x80;
    const uint8_t high = i == 1 ? lead.high : 0xBF;
    if (b < low || b > high) return {Kind::kInvalid, i};  // b starts the next sequence
  }
  return {Kind::kCharacter, lead.length};
}

}  // namespace

void Utf8Repair::Add(absl::string_view bytes, std::string* out) {
  pending_.append(bytes.data(), bytes.size());
  size_t pos = 0;
  while (pos < pending_.size()) {
    const Step step = Next(pending_, pos);
    if (step.kind == Kind::kIncomplete) break;
    if (step.kind == Kind::kCharacter) {
      out->append(pending_, pos, step.length);
    } else {
      out->append(kReplacement.data(), kReplacement.size());
    }
    pos += step.length;
  }
  pending_.erase(0, pos);
}

void Utf8Repair::Flush(std::string* out) {
  // What is held is a valid prefix of one character: one maximal subpart.
  if (!pending_.empty()) out->append(kReplacement.data(), kReplacement.size());
  pending_.clear();
}

std::string ReplaceInvalid(absl::string_view bytes) {
  Utf8Repair repair;
  std::string out;
  repair.Add(bytes, &out);
  repair.Flush(&out);
  return out;
}

}  // namespace tandem::utf8
