#include "services/coordinator/text_stream.h"

#include <algorithm>

#include "core/base/utf8.h"

namespace tandem {

std::string TextStream::Add(int32_t id) {
  if (stopped_) return "";
  if (id >= 0 && id < static_cast<int32_t>(token_bytes_->size())) pending_ += (*token_bytes_)[id];
  // A stop string ends the text right before it.
  size_t cut = std::string::npos;
  for (const std::string& stop : stop_strings_) {
    if (stop.empty()) continue;
    cut = std::min(cut, pending_.find(stop));
  }
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, cut);
    pending_.clear();
    return out;
  }
  // Hold back a suffix that may grow into a stop string, and an incomplete character.
  size_t hold = utf8::IncompleteSuffixLength(pending_);
  for (const std::string& stop : stop_strings_) {
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

std::string TextStream::Flush() {
  std::string out;
  out.swap(pending_);
  return stopped_ ? std::string() : out;
}

}  // namespace tandem
