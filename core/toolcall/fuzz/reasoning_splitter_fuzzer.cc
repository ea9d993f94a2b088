// libFuzzer target for the reasoning splitter. The input is a flags byte (bit 0: the output
// starts inside the reasoning; the rest seed the chunk sizes) and a model output (any bytes).
// Properties:
//  - the output fed in chunks splits as the output fed at once;
//  - nothing is invented: the content is a suffix of the output, the reasoning a substring of
//    it, and together they are no longer than it;
//  - an output that does not open with "<think>" (after whitespace), started outside the
//    reasoning, is all content, verbatim; the reasoning neither starts nor ends with
//    whitespace; the content does not start with whitespace after a reasoning.
// Nothing may crash or hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "core/base/fuzz_assert.h"
#include "core/toolcall/reasoning_splitter.h"

namespace tandem::toolcall {
namespace {

struct Split {
  std::string reasoning;
  std::string content;
};

void Add(const ReasoningDelta& d, Split* split) {
  split->reasoning += d.reasoning;
  split->content += d.content;
}

Split Whole(absl::string_view text, bool starts_in_reasoning) {
  ReasoningSplitter splitter(starts_in_reasoning);
  Split split;
  Add(splitter.Feed(text), &split);
  Add(splitter.Finish(), &split);
  return split;
}

// Chunks of 0..7 bytes (empty Feeds included), sizes from a generator seeded by `seed`.
Split Chunked(absl::string_view text, bool starts_in_reasoning, uint32_t seed) {
  ReasoningSplitter splitter(starts_in_reasoning);
  Split split;
  uint32_t state = seed * 2654435761u + 1;
  size_t pos = 0;
  while (pos < text.size()) {
    state = state * 1664525u + 1013904223u;
    const size_t size = (state >> 24) % 8;
    Add(splitter.Feed(text.substr(pos, size)), &split);
    pos += size;
  }
  Add(splitter.Finish(), &split);
  return split;
}

bool IsSpace(char c) { return absl::ascii_isspace(static_cast<unsigned char>(c)); }

void Check(absl::string_view text, bool starts_in_reasoning, uint32_t seed) {
  const Split whole = Whole(text, starts_in_reasoning);
  const Split chunked = Chunked(text, starts_in_reasoning, seed);
  TANDEM_FUZZ_ASSERT(whole.reasoning == chunked.reasoning && whole.content == chunked.content,
                     "chunking changed the split: reasoning '%s' vs '%s', content '%s' vs '%s'",
                     whole.reasoning.c_str(), chunked.reasoning.c_str(), whole.content.c_str(),
                     chunked.content.c_str());
  TANDEM_FUZZ_ASSERT(absl::EndsWith(text, whole.content), "content '%s' is no suffix",
                     whole.content.c_str());
  TANDEM_FUZZ_ASSERT(absl::StrContains(text, whole.reasoning), "reasoning '%s' is not in it",
                     whole.reasoning.c_str());
  TANDEM_FUZZ_ASSERT(whole.reasoning.size() + whole.content.size() <= text.size(),
                     "%zu + %zu bytes out of %zu", whole.reasoning.size(), whole.content.size(),
                     text.size());
  const bool opens = absl::StartsWith(absl::StripLeadingAsciiWhitespace(text), "<think>");
  if (!starts_in_reasoning && !opens) {
    TANDEM_FUZZ_ASSERT(whole.content == text && whole.reasoning.empty(), "not all content");
  }
  if (!whole.reasoning.empty()) {
    TANDEM_FUZZ_ASSERT(!IsSpace(whole.reasoning.front()) && !IsSpace(whole.reasoning.back()),
                       "reasoning '%s' not trimmed", whole.reasoning.c_str());
  }
  if (starts_in_reasoning || opens) {
    TANDEM_FUZZ_ASSERT(whole.content.empty() || !IsSpace(whole.content.front()),
                       "content '%s' keeps its leading whitespace", whole.content.c_str());
  }
}

}  // namespace
}  // namespace tandem::toolcall

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const absl::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  tandem::toolcall::Check(text, /*starts_in_reasoning=*/(data[0] & 1) != 0, data[0] >> 1);
  return 0;
}
