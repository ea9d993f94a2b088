// UTF-8 helpers for the tokenizers (internal to core/tokenizer).
#ifndef TANDEM_CORE_BASE_UTF8_H_
#define TANDEM_CORE_BASE_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tandem::utf8 {

// The length of the sequence a lead byte announces: 1 for ASCII and for bytes that cannot
// start a sequence (continuation bytes, 0xF8..0xFF), else 2..4.
inline size_t SequenceLength(uint8_t lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  if (lead < 0xF8) return 4;
  return 1;
}

// The length of the character starting at text[pos], clamped to the text.
inline size_t CharLength(absl::string_view text, size_t pos) {
  size_t n = SequenceLength(static_cast<uint8_t>(text[pos]));
  return n < text.size() - pos ? n : text.size() - pos;
}

// OK if `text` is well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF), else
// kInvalidArgument naming the byte offset of the first bad sequence.
absl::Status Validate(absl::string_view text);

// Appends the UTF-8 encoding of `cp` (must be <= 0x10FFFF) to `out`.
void Append(uint32_t cp, std::string* out);

}  // namespace tandem::utf8

#endif  // TANDEM_CORE_BASE_UTF8_H_
