#include "core/tokenizer/vocabulary.h"

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "core/tokenizer/fnv1a64.h"

namespace tandem {
namespace {

absl::Status CheckId(const std::optional<int32_t>& id, absl::string_view name, size_t n) {
  if (id.has_value() && (*id < 0 || static_cast<size_t>(*id) >= n)) {
    return absl::DataLossError(
        absl::StrCat(name, " token id ", *id, " is outside the vocabulary of ", n, " tokens"));
  }
  return absl::OkStatus();
}

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
