// Turns arbitrary bytes into well-formed UTF-8 the way Hugging Face's decoders do (Python's
// bytes.decode(errors="replace"), the WHATWG decoder): every well-formed character passes
// through, and each *maximal subpart* of an ill-formed sequence — the longest prefix of a
// character that was valid until the byte that broke it, or a single byte that can never
// start one — becomes one U+FFFD. The byte that broke a sequence is then read again as the
// start of the next.
//
//   "\xE2\x82" + "A"   -> "\uFFFD" "A"      (a truncated euro sign, then ASCII)
//   "\xED\xA0\x80"     -> 3 x "\uFFFD"      (a surrogate: ED may only be followed by 80..9F)
//   "\xF4\x90\x80\x80" -> 4 x "\uFFFD"      (past U+10FFFF)
//   "\xC0\xAF"         -> 2 x "\uFFFD"      (overlong)
//
// For streaming, Utf8Repair holds back the bytes of a character that may still complete; at
// the end of the stream (Flush) such a held-back prefix becomes one U+FFFD.
//
// Not thread-safe: one per stream.
#ifndef TANDEM_CORE_BASE_UTF8_REPAIR_H_
#define TANDEM_CORE_BASE_UTF8_REPAIR_H_

#include <string>

#include "absl/strings/string_view.h"

namespace tandem::utf8 {

// U+FFFD REPLACEMENT CHARACTER in UTF-8.
inline constexpr absl::string_view kReplacement = "\xEF\xBF\xBD";

class Utf8Repair {
 public:
  // Appends to `out` the well-formed text that `bytes` (after what came before) settles.
  void Add(absl::string_view bytes, std::string* out);
  // Appends U+FFFD for a held-back incomplete character, if any, and starts over.
  void Flush(std::string* out);
  // Whether bytes are held back (an incomplete character).
  bool holding() const { return !pending_.empty(); }

 private:
  std::string pending_;  // 0..3 bytes: a valid prefix of a character
};

// The whole of `bytes` repaired at once (Add then Flush).
std::string ReplaceInvalid(absl::string_view bytes);

}  // namespace tandem::utf8

#endif  // TANDEM_CORE_BASE_UTF8_REPAIR_H_
