#include "core/tokenizer/streaming_detokenizer.h"

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/base/status_macros.h"
#include "core/base/utf8.h"

namespace tandem {

absl::StatusOr<std::string> StreamingDetokenizer::Add(int32_t id) {
  // TokenBytes validates the id.
  RETURN_IF_ERROR(tokenizer_->TokenBytes(id).status());
  absl::string_view piece = tokenizer_->Piece(id, options_.render_special);
  if (piece.empty()) return std::string();
  // Decode drops the first byte of its whole output if it is a space: the same byte here.
  if (at_start_ && options_.strip_leading_space && tokenizer_->adds_leading_space() &&
      piece.front() == ' ') {
    piece.remove_prefix(1);
  }
  at_start_ = false;
  absl::StrAppend(&pending_, piece);
  const size_t hold = utf8::IncompleteSuffixLength(pending_);
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

std::string StreamingDetokenizer::Flush() { return std::exchange(pending_, std::string()); }

}  // namespace tandem
