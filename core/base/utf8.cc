#include "core/base/utf8.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tandem::utf8 {
namespace {

bool IsContinuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// The length of the well-formed sequence at text[pos], or 0 if it is malformed.
size_t WellFormedLength(absl::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  const uint8_t b0 = byte(0);
  if (b0 < 0x80) return 1;
  const size_t n = SequenceLength(b0);
  if (n == 1 || b0 < 0xC2 || b0 > 0xF4 || text.size() - pos < n) return 0;
  for (size_t i = 1; i < n; ++i) {
    if (!IsContinuation(byte(i))) return 0;
  }
  // The second byte's range excludes overlongs (E0, F0), surrogates (ED) and > U+10FFFF (F4).
  const uint8_t b1 = byte(1);
  if ((b0 == 0xE0 && b1 < 0xA0) || (b0 == 0xED && b1 > 0x9F) || (b0 == 0xF0 && b1 < 0x90) ||
      (b0 == 0xF4 && b1 > 0x8F)) {
    return 0;
  }
  return n;
}

}  // namespace

absl::Status Validate(absl::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t n = WellFormedLength(text, pos);
    if (n == 0) {
      return absl::InvalidArgumentError(absl::StrCat("text is not valid UTF-8 at byte ", pos));
    }
    pos += n;
  }
  return absl::OkStatus();
}

void Append(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace tandem::utf8
