// Accent stripping for BERT's normaliser (internal to core/tokenizer): NFD followed by the
// removal of nonspacing marks, for the Latin, Greek and Cyrillic letters that carry them.
#ifndef TANDEM_CORE_TOKENIZER_UNICODE_ACCENTS_H_
#define TANDEM_CORE_TOKENIZER_UNICODE_ACCENTS_H_

#include <cstdint>

namespace tandem {

// The base letter of a precomposed accented letter below U+2000 ('ü' -> 'u', 'ệ' -> 'e');
// any other character unchanged.
uint32_t StripAccent(uint32_t cp);

// Whether `cp` is a combining diacritical mark (dropped once text is decomposed).
bool IsCombiningMark(uint32_t cp);

}  // namespace tandem

#endif  // TANDEM_CORE_TOKENIZER_UNICODE_ACCENTS_H_
