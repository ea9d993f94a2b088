// Turns generated token ids into streamed text with only the vocabulary's token bytes (from
// the target's Describe). The text is always well-formed UTF-8, as TokenDelta.text (a proto3
// string) must be: whole characters only — a character split across tokens is held back
// until it completes — and bytes that can never complete a character become U+FFFD where
// they turn invalid, one per maximal ill-formed subpart, as Hugging Face's decoders do
// (core/base/utf8_repair.h). An incomplete character left at the end becomes one U+FFFD.
//
// Stop strings match that repaired text (so a stop string may contain U+FFFD) and are cut
// out: text that could still become the start of a stop string is held back until it cannot.
// A stop string that is not valid UTF-8 can never appear in the text and is ignored.
//
// Not thread-safe: one per request.
#ifndef TANDEM_SERVICES_COORDINATOR_TEXT_STREAM_H_
#define TANDEM_SERVICES_COORDINATOR_TEXT_STREAM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/base/utf8_repair.h"

namespace tandem {

class TextStream {
 public:
  // `token_bytes[id]`: what id decodes to. The stream continues a prompt, so no leading
  // space is dropped.
  TextStream(const std::vector<std::string>* token_bytes, std::vector<std::string> stop_strings);

  // Appends a token; returns the text that became safe to send. After a stop string appears,
  // stopped() is true and nothing more is returned.
  std::string Add(int32_t id);
  // The held-back rest at the end of generation (empty after a stop string). A stop string
  // completed by the final U+FFFD still stops (and cuts) the text.
  std::string Flush();
  bool stopped() const { return stopped_; }

 private:
  // Cuts pending_ at a stop string, or returns what cannot become one (all of it at the end).
  std::string Settle(bool at_end);

  const std::vector<std::string>* token_bytes_;
  std::vector<std::string> stop_strings_;  // non-empty, valid UTF-8
  utf8::Utf8Repair repair_;                // bytes of an incomplete character
  std::string pending_;                    // well-formed text not yet sent
  bool stopped_ = false;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_TEXT_STREAM_H_
