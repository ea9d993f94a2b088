#include "core/generation/vocab_compatibility.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <variant>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/model/gguf_reader.h"

namespace tandem {
namespace {

absl::Status Incompatible(absl::string_view what) {
  return absl::FailedPreconditionError(
      absl::StrCat("draft model is incompatible with the target: ", what));
}

// The metadata value of `key` as text for comparison, or "(absent)".
std::string MetadataText(const GgufFile& gguf, absl::string_view key) {
  const GgufValue* value = gguf.FindValue(key);
  if (value == nullptr) return "(absent)";
  if (const auto* text = std::get_if<absl::string_view>(&value->data)) {
    return std::string(*text);
  }
  if (const auto* number = std::get_if<uint64_t>(&value->data)) return absl::StrCat(*number);
  if (const auto* number = std::get_if<int64_t>(&value->data)) return absl::StrCat(*number);
  return "(not a string or integer)";
}

}  // namespace

absl::Status CheckGgufVocabulariesCompatible(const GgufFile& target, const GgufFile& draft) {
  for (absl::string_view key :
       {"tokenizer.ggml.model", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"}) {
    const std::string t = MetadataText(target, key);
    const std::string d = MetadataText(draft, key);
    if (t != d)
      return Incompatible(absl::StrCat(key, " is ", t, " in the target, ", d, " in the draft"));
  }
  absl::StatusOr<absl::Span<const absl::string_view>> t_tokens =
      target.GetStringArray("tokenizer.ggml.tokens");
  absl::StatusOr<absl::Span<const absl::string_view>> d_tokens =
      draft.GetStringArray("tokenizer.ggml.tokens");
  if (t_tokens.ok() != d_tokens.ok()) {
    return Incompatible(absl::StrCat("tokenizer.ggml.tokens is ", t_tokens.ok() ? "" : "not ",
                                     "present in the target and ", d_tokens.ok() ? "" : "not ",
                                     "in the draft"));
  }
  if (!t_tokens.ok()) return absl::OkStatus();
  const size_t n = std::min(t_tokens->size(), d_tokens->size());
  for (size_t id = 0; id < n; ++id) {
    if ((*t_tokens)[id] != (*d_tokens)[id]) {
      return Incompatible(absl::StrCat("token ", id, " is \"", absl::CEscape((*t_tokens)[id]),
                                       "\" in the target and \"", absl::CEscape((*d_tokens)[id]),
                                       "\" in the draft"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckDraftCompatible(const Model& target, const Model& draft) {
  const int64_t t_vocab = target.config().vocab_size;
  const int64_t d_vocab = draft.config().vocab_size;
  if (std::abs(t_vocab - d_vocab) > kMaxVocabSizeDifference) {
    return Incompatible(absl::StrCat("the target's vocabulary has ", t_vocab,
                                     " tokens and the draft's ", d_vocab, " (more than ",
                                     kMaxVocabSizeDifference, " apart)"));
  }
  if (target.gguf() != nullptr && draft.gguf() != nullptr) {
    return CheckGgufVocabulariesCompatible(*target.gguf(), *draft.gguf());
  }
  return absl::OkStatus();
}

}  // namespace tandem
