// Turns generated token ids into text one token at a time, for streaming: each Add returns
// only complete UTF-8 characters and holds back a character whose bytes are split across
// tokens (byte-fallback <0xNN> tokens, byte-level BPE pieces). Nothing is lost or repeated:
// the concatenation of every Add and the final Flush equals Tokenizer::Decode of all the ids
// with the same options (bytes that can never form a character are passed through as they are).
//
//   StreamingDetokenizer detok(&tokenizer, {.strip_leading_space = false});
//   for (int32_t id : generated) { ASSIGN_OR_RETURN(std::string text, detok.Add(id)); send(text); }
//   send(detok.Flush());
//
// Not thread-safe; one per stream. The tokenizer must outlive it.
#ifndef TANDEM_CORE_TOKENIZER_STREAMING_DETOKENIZER_H_
#define TANDEM_CORE_TOKENIZER_STREAMING_DETOKENIZER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/tokenizer/tokenizer.h"

namespace tandem {

class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer* tokenizer, DecodeOptions options = {})
      : tokenizer_(tokenizer), options_(options) {}

  // The text that `id` completes. kInvalidArgument for an id outside the vocabulary (the
  // state is unchanged).
  absl::StatusOr<std::string> Add(int32_t id);

  // Whatever is held back (an incomplete character at the end of the stream), emptied.
  std::string Flush();

 private:
  const Tokenizer* tokenizer_;
  DecodeOptions options_;
  std::string pending_;   // bytes of an incomplete character
  bool at_start_ = true;  // no byte has been produced yet
};

}  // namespace tandem

#endif  // TANDEM_CORE_TOKENIZER_STREAMING_DETOKENIZER_H_
