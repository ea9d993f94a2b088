// FNV-1a, 64 bits: the digest behind the vocabulary and tokenizer fingerprints. Not a
// cryptographic hash: it tells apart tokenizers that differ by accident (another model, another
// export), not ones crafted to collide.
#ifndef TANDEM_CORE_TOKENIZER_FNV1A64_H_
#define TANDEM_CORE_TOKENIZER_FNV1A64_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace tandem {

class Fnv1a64 {
 public:
  void Add(absl::string_view bytes) {
    for (char c : bytes) {
      hash_ ^= static_cast<uint8_t>(c);
      hash_ *= 0x100000001b3ULL;
    }
  }
  // Length-prefixed, so that ("ab", "c") and ("a", "bc") differ.
  void AddField(absl::string_view bytes) {
    AddInt(static_cast<int64_t>(bytes.size()));
    Add(bytes);
  }
  void AddInt(int64_t v) {
    char buf[8];
    for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)));
    Add(absl::string_view(buf, 8));
  }
  uint64_t hash() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

}  // namespace tandem

#endif  // TANDEM_CORE_TOKENIZER_FNV1A64_H_
