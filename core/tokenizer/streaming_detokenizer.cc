#include "core/tokenizer/streaming_detokenizer.h"

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/status_macros.h"

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
  std::string out;
  repair_.Add(piece, &out);
  return out;
}

std::string StreamingDetokenizer::Flush() {
  std::string out;
  repair_.Flush(&out);
  return out;
}

}  // namespace tandem
