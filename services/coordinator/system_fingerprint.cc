#include "services/coordinator/system_fingerprint.h"

#include "absl/strings/str_format.h"
#include "core/tokenizer/fnv1a64.h"

namespace tandem {
namespace {

void AddModel(const v1::ModelInfo& m, Fnv1a64& h) {
  h.AddField(m.name());
  h.AddField(m.architecture());
  h.AddInt(m.parameter_count());
  h.AddField(m.weight_type());
  h.AddField(m.kv_type());
  h.AddField(m.activations());
  h.AddInt(m.context_size());
  h.AddInt(m.vocab_size());
  h.AddField(m.vocabulary_fingerprint());
  h.AddField(m.tokenizer_fingerprint());
}

}  // namespace

std::string SystemFingerprint(const v1::ModelInfo& target, const v1::ModelInfo* draft,
                              absl::string_view version, const std::vector<std::string>& settings) {
  Fnv1a64 h;
  h.AddField("tandem system fingerprint 1");
  AddModel(target, h);
  h.AddInt(draft != nullptr ? 1 : 0);
  if (draft != nullptr) AddModel(*draft, h);
  h.AddField(version);
  h.AddInt(static_cast<int64_t>(settings.size()));
  for (const std::string& s : settings) h.AddField(s);
  return absl::StrFormat("fp_%016x", h.hash());
}

}  // namespace tandem
