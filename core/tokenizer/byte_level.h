// GPT-2's byte-level alphabet: every byte maps to one printable Unicode character, so that a
// byte-level BPE vocabulary can store arbitrary bytes as text. Printable Latin-1 bytes ('!'..'~',
// '¡'..'¬', '®'..'ÿ') map to themselves; the other 68 bytes map, in order, to U+0100.. (so the
// space 0x20 is 'Ġ' U+0120 and '\n' is 'Ċ' U+010A).
#ifndef TANDEM_CORE_TOKENIZER_BYTE_LEVEL_H_
#define TANDEM_CORE_TOKENIZER_BYTE_LEVEL_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace tandem {

// The character byte `b` maps to.
uint32_t ByteToCodepoint(uint8_t b);

// `bytes` with each byte replaced by its character, as UTF-8.
std::string ByteLevelEncode(absl::string_view bytes);

// The inverse: nullopt if `text` contains a character outside the alphabet (or is not UTF-8).
std::optional<std::string> ByteLevelDecode(absl::string_view text);

}  // namespace tandem

#endif  // TANDEM_CORE_TOKENIZER_BYTE_LEVEL_H_
