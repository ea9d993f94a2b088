// Text <-> token ids for the vocabularies models ship: SentencePiece-style BPE (scores, byte
// fallback, the dummy-prefix space), byte-level BPE (merge ranks, GPT-2's byte alphabet, the
// pre-tokenizer regex families) and WordPiece.
//
//   ASSIGN_OR_RETURN(Tokenizer tok, LoadTokenizer("model.gguf"));   // tokenizer_loader.h
//   ASSIGN_OR_RETURN(std::vector<int32_t> ids,
//                    tok.Encode(prompt, {.add_special = true, .parse_special = true}));
//   ASSIGN_OR_RETURN(std::string text, tok.Decode(ids));
//
// Special tokens: control tokens (BOS, <|im_start|>, ...) are recognised in the text only with
// parse_special, as chat-template output needs; user text must be encoded without it, so that
// a user typing "<|im_start|>" gets ordinary text tokens. User-defined (added, non-special)
// tokens are always recognised, as Hugging Face and llama.cpp do.
//
// Encode needs valid UTF-8 (kInvalidArgument naming the byte offset otherwise). Decode returns
// the bytes the tokens stand for; that may end inside a character, which is why streaming
// goes through StreamingDetokenizer (streaming_detokenizer.h).
//
// A Tokenizer is immutable and cheap to copy (it shares its tables); all methods are
// thread-safe.
#ifndef TANDEM_CORE_TOKENIZER_TOKENIZER_H_
#define TANDEM_CORE_TOKENIZER_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/tokenizer/vocabulary.h"

namespace tandem {

struct EncodeOptions {
  // Add BOS/EOS as the vocabulary says (add_bos / add_eos).
  bool add_special = false;
  // Recognise control tokens written in the text (chat-template output, never user text).
  bool parse_special = false;
};

struct DecodeOptions {
  // Control and unknown tokens decode to their text (e.g. "<s>") instead of nothing.
  bool render_special = false;
  // Drop the space that encoding put before the text (SentencePiece's dummy prefix, the '▁'
  // of a WordPiece word): the first byte of the output if it is ' '. Only for vocabularies
  // that add one; turn it off when decoding a continuation of earlier text.
  bool strip_leading_space = true;
};

class Tokenizer {
 public:
  // Validates the vocabulary (kDataLoss naming the culprit), builds the lookup tables and
  // compiles the pre-tokenizer (kUnimplemented for an unknown pre-tokenizer family).
  static absl::StatusOr<Tokenizer> Create(Vocabulary vocab);

  absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text,
                                              const EncodeOptions& options = {}) const;

  // kInvalidArgument naming the first id outside the vocabulary.
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids,
                                     const DecodeOptions& options = {}) const;

  // The bytes token `id` stands for in text: ' ' for '▁', the byte of <0xNN>, the raw bytes
  // of a byte-level token, the text of a control token. kInvalidArgument if out of range.
  absl::StatusOr<absl::string_view> TokenBytes(int32_t id) const;

  // What Decode appends for `id`: TokenBytes, or nothing for control and unknown tokens
  // unless `render_special`. `id` must be valid (0 <= id < vocab_size()).
  absl::string_view Piece(int32_t id, bool render_special) const;

  // The id whose stored text is exactly `text`, if any.
  std::optional<int32_t> TokenId(absl::string_view text) const;

  int32_t vocab_size() const;
  const Vocabulary& vocabulary() const;
  // Whether Decode's strip_leading_space applies to this vocabulary.
  bool adds_leading_space() const;
  // VocabularyFingerprint(vocabulary()), computed once.
  const std::string& fingerprint() const;

 private:
  struct Impl;
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

  std::shared_ptr<const Impl> impl_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_TOKENIZER_TOKENIZER_H_
