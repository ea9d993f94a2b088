// WordPiece (BERT) in llama.cpp's GGUF form (internal to core/tokenizer): the text is
// lower-cased, split at whitespace, with punctuation, ASCII symbols and CJK ideographs as
// words of their own; each word gets a '▁' prefix and is cut greedily into the longest tokens
// from its start (continuation pieces are stored without BERT's "##"). A word that cannot be
// cut entirely becomes the unknown token.
#ifndef TANDEM_CORE_TOKENIZER_WORDPIECE_H_
#define TANDEM_CORE_TOKENIZER_WORDPIECE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tokenizer/bpe_merge.h"
#include "core/tokenizer/pre_tokenizer.h"

namespace tandem {

class WordPiece {
 public:
  // `index` must outlive the WordPiece.
  static absl::StatusOr<WordPiece> Create(const TokenIndex* index, std::optional<int32_t> unk_id);

  // Appends the ids of `text` (valid UTF-8).
  absl::Status Encode(absl::string_view text, std::vector<int32_t>* out) const;

 private:
  WordPiece(const TokenIndex* index, std::optional<int32_t> unk_id, size_t max_token_size,
            PreTokenizer words)
      : index_(index), unk_id_(unk_id), max_token_size_(max_token_size), words_(std::move(words)) {}

  // Appends the tokens of one '▁'-prefixed word, or the unknown token.
  void CutWord(absl::string_view word, std::vector<int32_t>* out) const;

  const TokenIndex* index_;
  std::optional<int32_t> unk_id_;
  size_t max_token_size_;
  PreTokenizer words_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_TOKENIZER_WORDPIECE_H_
