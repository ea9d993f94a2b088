#include "core/tokenizer/byte_level.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "core/base/utf8.h"

namespace tandem {
namespace {

bool MapsToItself(uint32_t b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<uint32_t, 256> to_codepoint;
  std::array<std::string, 256> to_utf8;
  std::array<int16_t, 324> from_codepoint;  // codepoint -> byte, -1 if outside the alphabet

  Tables() {
    from_codepoint.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      to_codepoint[b] = MapsToItself(b) ? b : next++;
      utf8::Append(to_codepoint[b], &to_utf8[b]);
      from_codepoint[to_codepoint[b]] = static_cast<int16_t>(b);
    }
  }
};

const Tables& GetTables() {
  static const Tables* const tables = new Tables();
  return *tables;
}

}  // namespace

uint32_t ByteToCodepoint(uint8_t b) { return GetTables().to_codepoint[b]; }

std::string ByteLevelEncode(absl::string_view bytes) {
  const Tables& t = GetTables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += t.to_utf8[static_cast<uint8_t>(c)];
  return out;
}

std::optional<std::string> ByteLevelDecode(absl::string_view text) {
  const Tables& t = GetTables();
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const auto b0 = static_cast<uint8_t>(text[pos]);
    uint32_t cp;
    if (b0 < 0x80) {
      cp = b0;
      pos += 1;
    } else if (b0 >= 0xC2 && b0 < 0xE0 && pos + 1 < text.size() &&
               (static_cast<uint8_t>(text[pos + 1]) & 0xC0) == 0x80) {
      // Every character of the alphabet is below U+0800: at most two bytes.
      cp = ((b0 & 0x1F) << 6) | (static_cast<uint8_t>(text[pos + 1]) & 0x3F);
      pos += 2;
    } else {
      return std::nullopt;
    }
    if (cp >= t.from_codepoint.size() || t.from_codepoint[cp] < 0) return std::nullopt;
    out.push_back(static_cast<char>(t.from_codepoint[cp]));
  }
  return out;
}

}  // namespace tandem
