#include "services/coordinator/text_stream.h"

#include <algorithm>
#include <utility>

#include "core/base/utf8.h"

namespace tandem {

TextStream::TextStream(const std::vector<std::string>* token_bytes,
                       std::vector<std::string> stop_strings)
    : token_bytes_(token_bytes) {
  for (std::string& stop : stop_strings) {
    if (!stop.empty() && utf8::Validate(stop).ok()) stop_strings_.push_back(std::move(stop));
  }
}

std::string TextStream::Add(int32_t id) {
  if (stopped_) return "";
  if (id >= 0 && id < static_cast<int32_t>(token_bytes_->size())) {
    repair_.Add((*token_bytes_)[id], &pending_);
  }
  return Settle(/*at_end=*/false);
}

std::string TextStream::Flush() {
  if (stopped_) return "";
  repair_.Flush(&pending_);
  return Settle(/*at_end=*/true);
}

std::string TextStream::Settle(bool at_end) {
  // A stop string ends the text right before it.
  size_t cut = std::string::npos;
  for (const std::string& stop : stop_strings_) cut = std::min(cut, pending_.find(stop));
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, cut);
    pending_.clear();
    return out;
  }
  // Hold back a suffix that may grow into a stop string. Both are well-formed UTF-8, so the
  // suffix starts at a character boundary.
  size_t hold = 0;
  for (const std::string& stop : stop_strings_) {
    if (at_end) break;
    for (size_t n = std::min(stop.size() - 1, pending_.size()); n > hold; --n) {
      if (pending_.compare(pending_.size() - n, n, stop, 0, n) == 0) {
        hold = n;
        break;
      }
    }
  }
  std::string out = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return out;
}

}  // namespace tandem
