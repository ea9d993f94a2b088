// libFuzzer target for the tokenizers. Each input is used twice with each of the stories260K
// SentencePiece BPE (its GGUF and its Hugging Face tokenizer.json) and GPT-2's byte-level BPE
// (a GGUF vocabulary):
//  - as text: Encode must refuse invalid UTF-8 with kInvalidArgument and otherwise succeed
//    with ids in [0, vocab); Decode of those ids gives the text back exactly (every one of
//    these vocabularies covers every byte: byte fallback or the byte-level alphabet), except
//    that SentencePiece's U+2581 reads as a space; with parse_special the ids are in range
//    too, and round-trip with render_special where the vocabulary adds no leading space;
//  - as little-endian 16-bit ids (some outside the vocabulary): Decode refuses an id out of
//    range with kInvalidArgument; StreamingDetokenizer skips such ids unchanged, and the
//    concatenation of its pieces equals Decode of the valid ids whenever that is valid UTF-8.
// The files come from $TANDEM_SHARED (or the shared folder configured at build time).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "core/base/fuzz_assert.h"
#include "core/base/shared_data_test_util.h"
#include "core/base/utf8.h"
#include "core/tokenizer/streaming_detokenizer.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tokenizer/tokenizer_loader.h"

namespace tandem {
namespace {

struct NamedTokenizer {
  const char* file;
  Tokenizer tokenizer;
};

const std::vector<NamedTokenizer>& Tokenizers() {
  static const std::vector<NamedTokenizer>* all = [] {
    auto* loaded = new std::vector<NamedTokenizer>;
    for (const char* file :
         {"models/stories260K/stories260K.gguf", "models/stories260K/hf/tokenizer.json",
          "models/vocab/ggml-vocab-gpt-2.gguf"}) {
      absl::StatusOr<std::string> path = testing::SharedFile(file);
      absl::StatusOr<Tokenizer> tokenizer =
          path.ok() ? LoadTokenizer(*path) : absl::StatusOr<Tokenizer>(path.status());
      if (!tokenizer.ok()) {
        std::fprintf(stderr, "tokenizer_fuzzer: cannot load %s: %s\n", file,
                     tokenizer.status().ToString().c_str());
        std::exit(2);
      }
      loaded->push_back({file, *std::move(tokenizer)});
    }
    return loaded;
  }();
  return *all;
}

void CheckIds(const NamedTokenizer& t, const std::vector<int32_t>& ids) {
  for (int32_t id : ids) {
    TANDEM_FUZZ_ASSERT(id >= 0 && id < t.tokenizer.vocab_size(), "%s: id %d out of range", t.file,
                       id);
  }
}

void CheckText(const NamedTokenizer& t, absl::string_view text) {
  const Tokenizer& tok = t.tokenizer;
  absl::StatusOr<std::vector<int32_t>> ids = tok.Encode(text);
  if (!utf8::Validate(text).ok()) {
    TANDEM_FUZZ_ASSERT(ids.status().code() == absl::StatusCode::kInvalidArgument,
                       "%s: invalid UTF-8 gave %s", t.file, ids.status().ToString().c_str());
    return;
  }
  TANDEM_FUZZ_ASSERT(ids.ok(), "%s: %s", t.file, ids.status().ToString().c_str());
  CheckIds(t, *ids);
  absl::StatusOr<std::string> decoded = tok.Decode(*ids);
  TANDEM_FUZZ_ASSERT(decoded.ok(), "%s: %s", t.file, decoded.status().ToString().c_str());
  // A Metaspace vocabulary stores ' ' as U+2581, so a U+2581 in the text decodes as ' ' (as
  // SentencePiece and Hugging Face do).
  const std::string expected = tok.vocabulary().encoding == TextEncoding::kMetaspace
                                   ? absl::StrReplaceAll(text, {{"\xE2\x96\x81", " "}})
                                   : std::string(text);
  TANDEM_FUZZ_ASSERT(*decoded == expected, "%s: decode(encode(x)) != x for %zu bytes", t.file,
                     text.size());

  absl::StatusOr<std::vector<int32_t>> special =
      tok.Encode(text, {.add_special = true, .parse_special = true});
  TANDEM_FUZZ_ASSERT(special.ok(), "%s: %s", t.file, special.status().ToString().c_str());
  CheckIds(t, *special);
  if (tok.adds_leading_space()) return;  // a prefix space goes before every segment
  absl::StatusOr<std::vector<int32_t>> parsed = tok.Encode(text, {.parse_special = true});
  TANDEM_FUZZ_ASSERT(parsed.ok(), "%s: %s", t.file, parsed.status().ToString().c_str());
  absl::StatusOr<std::string> rendered = tok.Decode(*parsed, {.render_special = true});
  TANDEM_FUZZ_ASSERT(rendered.ok() && *rendered == text,
                     "%s: parse_special/render_special does not round-trip", t.file);
}

void CheckIdSequence(const NamedTokenizer& t, const uint8_t* data, size_t size) {
  const Tokenizer& tok = t.tokenizer;
  const int32_t vocab = tok.vocab_size();
  std::vector<int32_t> ids, valid;
  for (size_t i = 0; i + 1 < size; i += 2) {
    const int32_t raw = data[i] | (data[i + 1] << 8);
    ids.push_back(raw % (vocab + 16) - 8);  // a few ids on either side of the vocabulary
  }
  const DecodeOptions options{.render_special = size > 0 && (data[0] & 1),
                              .strip_leading_space = size > 0 && (data[0] & 2)};
  StreamingDetokenizer stream(&tok, options);
  std::string streamed;
  bool all_valid = true;
  for (int32_t id : ids) {
    absl::StatusOr<std::string> piece = stream.Add(id);
    const bool in_range = id >= 0 && id < vocab;
    all_valid = all_valid && in_range;
    if (!in_range) {
      TANDEM_FUZZ_ASSERT(piece.status().code() == absl::StatusCode::kInvalidArgument,
                         "%s: Add(%d) gave %s", t.file, id, piece.status().ToString().c_str());
      continue;
    }
    TANDEM_FUZZ_ASSERT(piece.ok(), "%s: Add(%d): %s", t.file, id,
                       piece.status().ToString().c_str());
    streamed += *piece;
    valid.push_back(id);
  }
  streamed += stream.Flush();
  absl::StatusOr<std::string> decoded = tok.Decode(ids, options);
  TANDEM_FUZZ_ASSERT(decoded.ok() == all_valid, "%s: Decode gave %s with%s ids out of range",
                     t.file, decoded.status().ToString().c_str(), all_valid ? " no" : "");
  decoded = tok.Decode(valid, options);
  TANDEM_FUZZ_ASSERT(decoded.ok(), "%s: %s", t.file, decoded.status().ToString().c_str());
  if (utf8::Validate(*decoded).ok()) {
    TANDEM_FUZZ_ASSERT(streamed == *decoded, "%s: streamed text differs from Decode", t.file);
  }
}

}  // namespace
}  // namespace tandem

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tandem::Tokenizers();  // load once, before the first input
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  for (const tandem::NamedTokenizer& t : tandem::Tokenizers()) {
    tandem::CheckText(t, text);
    tandem::CheckIdSequence(t, data, size);
  }
  return 0;
}
