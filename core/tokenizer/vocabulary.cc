#include "core/tokenizer/vocabulary.h"

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace tandem {
namespace {

absl::Status CheckId(const std::optional<int32_t>& id, absl::string_view name, size_t n) {
  if (id.has_value() && (*id < 0 || static_cast<size_t>(*id) >= n)) {
    return absl::DataLossError(
        absl::StrCat(name, " token id ", *id, " is outside the vocabulary of ", n, " tokens"));
  }
  return absl::OkStatus();
}

class Fnv1a64 {
 public:
  void Add(absl::string_view bytes) {
    for (char c : bytes) {
      hash_ ^= static_cast<uint8_t>(c);
      hash_ *= 0x100000001b3ULL;
    }
  }
  // Length-prefixed, so that ("ab", "c") and ("a", "bc") differ.
  void AddField(absl::string_view bytes) {
    AddInt(static_cast<int64_t>(bytes.size()));
    Add(bytes);
  }
  void AddInt(int64_t v) {
    char buf[8];
    for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)));
    Add(absl::string_view(buf, 8));
  }
  uint64_t hash() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

}  // namespace

absl::Status ValidateVocabulary(const Vocabulary& vocab) {
  const size_t n = vocab.tokens.size();
  if (n == 0) return absl::DataLossError("the vocabulary has no tokens");
  if (vocab.types.size() != n) {
    return absl::DataLossError(
        absl::StrCat("the vocabulary has ", n, " tokens but ", vocab.types.size(), " token types"));
  }
  if (vocab.model == MergeModel::kScores && vocab.scores.size() != n) {
    return absl::DataLossError(
        absl::StrCat("the vocabulary has ", n, " tokens but ", vocab.scores.size(), " scores"));
  }
  if (vocab.model == MergeModel::kRanks && vocab.merges.empty() && !vocab.ignore_merges) {
    return absl::DataLossError("a BPE vocabulary needs merges");
  }
  for (size_t i = 0; i < n; ++i) {
    if (vocab.tokens[i].empty()) {
      return absl::DataLossError(absl::StrCat("token ", i, " has an empty text"));
    }
  }
  if (auto s = CheckId(vocab.bos_id, "BOS", n); !s.ok()) return s;
  if (auto s = CheckId(vocab.eos_id, "EOS", n); !s.ok()) return s;
  if (auto s = CheckId(vocab.unk_id, "unknown", n); !s.ok()) return s;
  if (auto s = CheckId(vocab.pad_id, "padding", n); !s.ok()) return s;
  for (const auto* ids : {&vocab.end_of_turn_ids, &vocab.lstrip_ids, &vocab.rstrip_ids}) {
    for (int32_t id : *ids) {
      if (auto s = CheckId(id, ids == &vocab.end_of_turn_ids ? "end-of-turn" : "stripping", n);
          !s.ok()) {
        return s;
      }
    }
  }
  if (vocab.add_bos && !vocab.bos_id.has_value()) {
    return absl::DataLossError("the vocabulary adds BOS but has no BOS token");
  }
  if (vocab.add_eos && !vocab.eos_id.has_value()) {
    return absl::DataLossError("the vocabulary adds EOS but has no EOS token");
  }
  return absl::OkStatus();
}

absl::string_view TextEncodingName(TextEncoding encoding) {
  switch (encoding) {
    case TextEncoding::kMetaspace:
      return "metaspace";
    case TextEncoding::kByteLevel:
      return "byte-level";
    case TextEncoding::kWordPiece:
      return "wordpiece";
  }
  return "unknown";
}

std::string VocabularyFingerprint(const Vocabulary& vocab) {
  Fnv1a64 h;
  h.AddField(TextEncodingName(vocab.encoding));
  h.AddInt(static_cast<int64_t>(vocab.tokens.size()));
  for (const std::string& token : vocab.tokens) h.AddField(token);
  for (const auto* id : {&vocab.bos_id, &vocab.eos_id, &vocab.unk_id, &vocab.pad_id}) {
    h.AddInt(id->has_value() ? **id : -1);
  }
  return absl::StrFormat("%016x", h.hash());
}

}  // namespace tandem
