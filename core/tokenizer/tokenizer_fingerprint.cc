#include "core/tokenizer/tokenizer_fingerprint.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/tokenizer/fnv1a64.h"

namespace tandem {
namespace {

void AddIds(const std::vector<int32_t>& ids, Fnv1a64& h) {
  h.AddInt(static_cast<int64_t>(ids.size()));
  for (int32_t id : ids) h.AddInt(id);
}

void AddStrings(const std::vector<std::string>& texts, Fnv1a64& h) {
  h.AddInt(static_cast<int64_t>(texts.size()));
  for (const std::string& text : texts) h.AddField(text);
}

void AddOptionalId(const std::optional<int32_t>& id, Fnv1a64& h) {
  h.AddInt(id.has_value() ? 1 : 0);  // "none" and any id differ
  h.AddInt(id.value_or(0));
}

// Scores by their bits: the merge order compares them exactly.
void AddScores(const std::vector<float>& scores, Fnv1a64& h) {
  h.AddInt(static_cast<int64_t>(scores.size()));
  for (float score : scores) {
    uint32_t bits = 0;
    std::memcpy(&bits, &score, sizeof(bits));
    h.AddInt(bits);
  }
}

}  // namespace

std::string TokenizerFingerprint(const Vocabulary& vocab,
                                 const std::optional<std::string>& chat_template) {
  Fnv1a64 h;
  h.AddInt(static_cast<int64_t>(vocab.encoding));
  h.AddInt(static_cast<int64_t>(vocab.model));
  AddStrings(vocab.tokens, h);
  h.AddInt(static_cast<int64_t>(vocab.types.size()));
  for (TokenType type : vocab.types) h.AddInt(static_cast<int64_t>(type));
  AddScores(vocab.scores, h);
  h.AddInt(static_cast<int64_t>(vocab.merges.size()));
  for (const auto& [left, right] : vocab.merges) {
    h.AddField(left);
    h.AddField(right);
  }
  h.AddField(vocab.pre_tokenizer);
  AddStrings(vocab.pre_tokenizer_regexes, h);
  for (const auto* id : {&vocab.bos_id, &vocab.eos_id, &vocab.unk_id, &vocab.pad_id}) {
    AddOptionalId(*id, h);
  }
  AddIds(vocab.end_of_turn_ids, h);
  AddIds(vocab.lstrip_ids, h);
  AddIds(vocab.rstrip_ids, h);
  h.AddInt(static_cast<int64_t>(vocab.space_prefix));
  for (bool flag : {vocab.add_bos, vocab.add_eos, vocab.metaspace_split, vocab.byte_prefix_space,
                    vocab.byte_fallback, vocab.ignore_merges, vocab.fuse_unk}) {
    h.AddInt(flag ? 1 : 0);
  }
  h.AddInt(chat_template.has_value() ? 1 : 0);
  h.AddField(chat_template.value_or(""));
  return absl::StrFormat("%016x", h.hash());
}

}  // namespace tandem
