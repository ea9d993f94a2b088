#include "core/tokenizer/wordpiece.h"

#include <locale.h>
#include <wctype.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/status_macros.h"
#include "core/base/utf8.h"
#include "core/tokenizer/unicode_accents.h"

namespace tandem {
namespace {

constexpr absl::string_view kMetaspace = "\xE2\x96\x81";  // '▁'

// The characters that are words of their own: Unicode punctuation, ASCII symbols and the CJK
// ideograph blocks BERT lists.
constexpr absl::string_view kWordBreaks =
    R"([\p{P}\x21-\x2F\x3A-\x40\x5B-\x60\x7B-\x7E]|)"
    R"([\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F})"
    R"(\x{2B740}-\x{2B81F}\x{2B820}-\x{2CEAF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}])";
// Characters BERT drops: NUL, U+FFFD and every other (non-whitespace) control or format one.
constexpr absl::string_view kDropped = R"(\x{0}|\x{FFFD}|(?![\t\n\r])\p{C})";

// Lower-cases one character with the C library's Unicode tables (C.UTF-8 locale, queried
// without touching the process locale); ASCII only if that locale is missing.
uint32_t ToLower(uint32_t cp) {
  static const locale_t locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(0));
  if (locale != static_cast<locale_t>(0)) {
    return static_cast<uint32_t>(towlower_l(static_cast<wint_t>(cp), locale));
  }
  return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
}

// The kinds PreTokenizer::Split reports for the regexes of Create.
constexpr int kDroppedKind = 0;
constexpr int kSpaceKind = 1;
constexpr int kBreakKind = 2;

uint32_t DecodeChar(absl::string_view text, size_t pos, size_t n) {
  const auto b = [&](size_t i) {
    return static_cast<uint32_t>(static_cast<uint8_t>(text[pos + i]));
  };
  switch (n) {
    case 1:
      return b(0);
    case 2:
      return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3:
      return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    default:
      return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  }
}

void AppendLowered(absl::string_view text, std::string* out) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t n = utf8::CharLength(text, pos);
    const uint32_t cp = StripAccent(ToLower(DecodeChar(text, pos, n)));
    pos += n;
    if (!IsCombiningMark(cp)) utf8::Append(cp, out);
  }
}

}  // namespace

absl::StatusOr<WordPiece> WordPiece::Create(const TokenIndex* index,
                                            std::optional<int32_t> unk_id) {
  size_t max_size = 0;
  for (const auto& [text, id] : *index) max_size = std::max(max_size, text.size());
  ASSIGN_OR_RETURN(PreTokenizer words, PreTokenizer::Create({std::string(kDropped), R"(\s+)",
                                                             std::string(kWordBreaks)}));
  return WordPiece(index, unk_id, max_size, std::move(words));
}

absl::Status WordPiece::Encode(absl::string_view text, std::vector<int32_t>* out) const {
  std::vector<absl::string_view> pieces;
  std::vector<int> kinds;
  RETURN_IF_ERROR(words_.Split(text, &pieces, &kinds));
  std::string word(kMetaspace);
  const auto flush = [&] {
    if (word.size() > kMetaspace.size()) CutWord(word, out);
    word.resize(kMetaspace.size());
  };
  for (size_t i = 0; i < pieces.size(); ++i) {
    switch (kinds[i]) {
      case kDroppedKind:
        break;
      case kSpaceKind:
        flush();
        break;
      case kBreakKind:
        flush();
        AppendLowered(pieces[i], &word);
        flush();
        break;
      default:
        AppendLowered(pieces[i], &word);
        break;
    }
  }
  flush();
  return absl::OkStatus();
}

void WordPiece::CutWord(absl::string_view word, std::vector<int32_t>* out) const {
  const size_t first = out->size();
  for (size_t pos = 0; pos < word.size();) {
    size_t len = std::min(word.size() - pos, max_token_size_);
    for (; len > 0; --len) {
      auto it = index_->find(word.substr(pos, len));
      if (it != index_->end()) {
        out->push_back(it->second);
        break;
      }
    }
    if (len == 0) {  // no token fits here: the whole word is unknown
      out->resize(first);
      if (unk_id_.has_value()) out->push_back(*unk_id_);
      return;
    }
    pos += len;
  }
}

}  // namespace tandem
