#include "core/decoder/model_config.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/decoder/architecture.h"

namespace tandem {
namespace {

// Bounds that no real model reaches; anything beyond is a corrupt or hostile file.
constexpr int64_t kMaxDim = 1 << 16;
constexpr int64_t kMaxVocab = 1 << 22;
constexpr int64_t kMaxLayers = 1024;

absl::Status CheckRange(const char* field, int64_t value, int64_t max) {
  if (value <= 0 || value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("model config: ", field, " = ", value, " is outside [1, ", max, "]"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ModelConfig::Validate() const {
  ModelConfig copy = *this;
  if (absl::Status known = ApplyArchitecture("model config", &copy); !known.ok()) return known;
  for (auto [field, value, max] :
       {std::tuple<const char*, int64_t, int64_t>{"vocab_size", vocab_size, kMaxVocab},
        {"dim", dim, kMaxDim},
        {"n_layers", n_layers, kMaxLayers},
        {"n_heads", n_heads, kMaxDim},
        {"n_kv_heads", n_kv_heads, kMaxDim},
        {"head_dim", head_dim, kMaxDim},
        {"ffn_dim", ffn_dim, 4 * kMaxDim},
        {"context_length", context_length, int64_t{1} << 24}}) {
    if (absl::Status s = CheckRange(field, value, max); !s.ok()) return s;
  }
  if (n_heads % n_kv_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model config: n_heads ", n_heads, " is not a multiple of n_kv_heads ", n_kv_heads));
  }
  if (rope_dim <= 0 || rope_dim > head_dim || rope_dim % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat("model config: rope dimension ", rope_dim,
                                                   " must be even and in [2, head_dim ", head_dim,
                                                   "]"));
  }
  if (!(rms_eps > 0) || !std::isfinite(rms_eps)) {
    return absl::InvalidArgumentError(absl::StrCat("model config: rms_eps ", rms_eps));
  }
  if (!(rope_base > 0) || !std::isfinite(rope_base) || !(rope_scale >= 1) ||
      !std::isfinite(rope_scale)) {
    return absl::InvalidArgumentError(
        absl::StrCat("model config: rope base ", rope_base, " / scale ", rope_scale));
  }
  if (attn_softcap < 0 || final_softcap < 0 || sliding_window < 0 || sliding_pattern < 0 ||
      !(rope_base_swa >= 0) || !std::isfinite(attn_softcap) || !std::isfinite(final_softcap)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model config: soft-caps ", attn_softcap, " / ", final_softcap, ", sliding window ",
        sliding_window, " pattern ", sliding_pattern, ", sliding RoPE base ", rope_base_swa));
  }
  return absl::OkStatus();
}

}  // namespace tandem
