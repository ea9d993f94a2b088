// Turns generated token ids into text one token at a time, for streaming: each Add returns
// only complete, well-formed UTF-8 characters and holds back a character whose bytes are
// split across tokens (byte-fallback <0xNN> tokens, byte-level BPE pieces). Bytes that can
// never complete a character become U+FFFD where they turn invalid, one per maximal
// ill-formed subpart, as Hugging Face's decoders do (core/base/utf8_repair.h); the
// coordinator's TextStream does the same, so tandem-chat prints the same text in-process and
// through a coordinator. Nothing is lost or repeated: the concatenation of every Add and the
// final Flush equals utf8::ReplaceInvalid(Tokenizer::Decode(ids)) with the same options.
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
#include "core/base/utf8_repair.h"
#include "core/tokenizer/tokenizer.h"

namespace tandem {

class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer* tokenizer, DecodeOptions options = {})
      : tokenizer_(tokenizer), options_(options) {}

  // The text that `id` completes. kInvalidArgument for an id outside the vocabulary (the
  // state is unchanged).
  absl::StatusOr<std::string> Add(int32_t id);

  // The end of the stream: U+FFFD for a held-back incomplete character, or nothing.
  std::string Flush();

 private:
  const Tokenizer* tokenizer_;
  DecodeOptions options_;
  utf8::Utf8Repair repair_;  // holds the bytes of an incomplete character
  bool at_start_ = true;     // no byte has been produced yet
};

}  // namespace tandem

#endif  // TANDEM_CORE_TOKENIZER_STREAMING_DETOKENIZER_H_
