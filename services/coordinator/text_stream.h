// Turns generated token ids into streamed text with only the vocabulary's token bytes (from
// the target's Describe): whole UTF-8 characters only, and stop strings cut out — text that
// could still become the start of a stop string is held back until it cannot.
//
// Not thread-safe: one per request.
#ifndef TANDEM_SERVICES_COORDINATOR_TEXT_STREAM_H_
#define TANDEM_SERVICES_COORDINATOR_TEXT_STREAM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace tandem {

class TextStream {
 public:
  // `token_bytes[id]`: what id decodes to. The stream continues a prompt, so no leading
  // space is dropped.
  TextStream(const std::vector<std::string>* token_bytes, std::vector<std::string> stop_strings)
      : token_bytes_(token_bytes), stop_strings_(std::move(stop_strings)) {}

  // Appends a token; returns the text that became safe to send. After a stop string appears,
  // stopped() is true and nothing more is returned.
  std::string Add(int32_t id);
  // The held-back rest at the end of generation (empty after a stop string).
  std::string Flush();
  bool stopped() const { return stopped_; }

 private:
  const std::vector<std::string>* token_bytes_;
  std::vector<std::string> stop_strings_;
  std::string pending_;  // text not yet sent
  bool stopped_ = false;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_TEXT_STREAM_H_
