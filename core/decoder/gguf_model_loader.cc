// Loads a Llama-family model from a GGUF file: config from `{arch}.*` metadata, weights by
// llama.cpp's tensor names, read in place from the mapping.
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/decoder/architecture.h"
#include "core/decoder/model.h"

namespace tandem {
namespace {

// An integer metadata value, or `fallback` when the key is absent.
absl::StatusOr<int64_t> IntOr(const GgufFile& gguf, const std::string& key, int64_t fallback) {
  if (!gguf.HasKey(key)) return fallback;
  return gguf.GetInt64(key);
}

absl::StatusOr<float> FloatOr(const GgufFile& gguf, const std::string& key, float fallback) {
  if (!gguf.HasKey(key)) return fallback;
  return gguf.GetFloat32(key);
}

absl::StatusOr<int64_t> RequiredInt(const GgufFile& gguf, const std::string& key) {
  if (!gguf.HasKey(key)) {
    return absl::InvalidArgumentError(
        absl::StrCat(gguf.path(), ": metadata key '", key, "' is missing"));
  }
  return gguf.GetInt64(key);
}

// Gemma's keys under `p` ("gemma2."): soft-caps, sliding window and pattern, sliding RoPE base.
absl::Status ReadGemmaKeys(const GgufFile& gguf, const std::string& p, ModelConfig* c) {
  ASSIGN_OR_RETURN(c->attn_softcap, FloatOr(gguf, p + "attn_logit_softcapping", 0.0f));
  ASSIGN_OR_RETURN(c->final_softcap, FloatOr(gguf, p + "final_logit_softcapping", 0.0f));
  ASSIGN_OR_RETURN(c->sliding_window, IntOr(gguf, p + "attention.sliding_window", 0));
  // llama.cpp reads the pattern as one integer; an array value leaves its default.
  const GgufValue* pattern = gguf.FindValue(p + "attention.sliding_window_pattern");
  if (pattern != nullptr && pattern->type != GgufValueType::kArray) {
    ASSIGN_OR_RETURN(c->sliding_pattern, gguf.GetInt64(p + "attention.sliding_window_pattern"));
  }
  ASSIGN_OR_RETURN(c->rope_base_swa, FloatOr(gguf, p + "rope.freq_base_swa", 0.0f));
  // llama.cpp scales the 27B models' queries by 1/sqrt(dim / heads) (their
  // query_pre_attn_scalar), the others' by 1/sqrt(head_dim); it knows the 27B by its layers.
  const int64_t layers_27b = c->architecture == "gemma2" ? 46 : 62;
  if (c->n_layers == layers_27b && c->n_heads > 0) {
    c->attn_scale = 1.0f / std::sqrt(static_cast<float>(c->dim / c->n_heads));
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelConfig> ConfigFromGguf(const GgufFile& gguf) {
  ModelConfig c;
  ASSIGN_OR_RETURN(absl::string_view arch, gguf.GetString("general.architecture"));
  c.architecture = std::string(arch);
  RETURN_IF_ERROR(ApplyArchitecture(gguf.path(), &c));
  if (gguf.HasKey("general.name")) {
    ASSIGN_OR_RETURN(absl::string_view name, gguf.GetString("general.name"));
    c.name = std::string(name);
  }
  const std::string p = c.architecture + ".";
  ASSIGN_OR_RETURN(c.dim, RequiredInt(gguf, p + "embedding_length"));
  ASSIGN_OR_RETURN(c.n_layers, RequiredInt(gguf, p + "block_count"));
  ASSIGN_OR_RETURN(c.n_heads, RequiredInt(gguf, p + "attention.head_count"));
  ASSIGN_OR_RETURN(c.n_kv_heads, IntOr(gguf, p + "attention.head_count_kv", c.n_heads));
  ASSIGN_OR_RETURN(c.ffn_dim, RequiredInt(gguf, p + "feed_forward_length"));
  ASSIGN_OR_RETURN(c.context_length, IntOr(gguf, p + "context_length", 2048));
  ASSIGN_OR_RETURN(c.rms_eps, FloatOr(gguf, p + "attention.layer_norm_rms_epsilon", 1e-5f));
  ASSIGN_OR_RETURN(c.rope_base, FloatOr(gguf, p + "rope.freq_base", 10000.0f));
  if (c.n_heads <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(gguf.path(), ": head_count ", c.n_heads));
  }
  ASSIGN_OR_RETURN(c.head_dim, IntOr(gguf, p + "attention.key_length", c.dim / c.n_heads));
  ASSIGN_OR_RETURN(c.rope_dim, IntOr(gguf, p + "rope.dimension_count", c.head_dim));
  if (gguf.HasKey(p + "rope.scaling.type")) {
    ASSIGN_OR_RETURN(absl::string_view type, gguf.GetString(p + "rope.scaling.type"));
    if (type == "linear") {
      ASSIGN_OR_RETURN(c.rope_scale, FloatOr(gguf, p + "rope.scaling.factor", 1.0f));
    } else if (type != "none") {
      return absl::UnimplementedError(
          absl::StrCat(gguf.path(), ": RoPE scaling '", type, "' is not supported (linear)"));
    }
  }
  c.rope_freq_factors = gguf.FindTensorInfo("rope_freqs.weight") != nullptr;
  if (c.gemma) RETURN_IF_ERROR(ReadGemmaKeys(gguf, p, &c));
  ASSIGN_OR_RETURN(TensorView embedding, gguf.GetTensor("token_embd.weight"));
  if (embedding.ne.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(gguf.path(), ": token_embd.weight is not a matrix"));
  }
  c.vocab_size = embedding.ne[1];
  c.tied_output = gguf.FindTensorInfo("output.weight") == nullptr;
  RETURN_IF_ERROR(c.Validate());
  return c;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> LoadGgufModel(const std::string& path) {
  ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::Open(path));
  std::unique_ptr<Model> model(new Model());
  model->path_ = path;
  ASSIGN_OR_RETURN(model->config_, ConfigFromGguf(gguf));
  model->gguf_.emplace(std::move(gguf));
  const GgufFile& file = *model->gguf_;
  Model::TensorNames names{"token_embd.weight",
                           "output_norm.weight",
                           "output.weight",
                           "rope_freqs.weight",
                           "blk.{}.attn_norm.weight",
                           "blk.{}.attn_q.weight",
                           "blk.{}.attn_k.weight",
                           "blk.{}.attn_v.weight",
                           "blk.{}.attn_output.weight",
                           "blk.{}.attn_q.bias",
                           "blk.{}.attn_k.bias",
                           "blk.{}.attn_v.bias",
                           "blk.{}.ffn_norm.weight",
                           "blk.{}.ffn_gate.weight",
                           "blk.{}.ffn_up.weight",
                           "blk.{}.ffn_down.weight",
                           "blk.{}.attn_q_norm.weight",
                           "blk.{}.attn_k_norm.weight",
                           "blk.{}.attn_qkv.weight",
                           "blk.{}.ffn_up.weight",
                           "blk.{}.post_attention_norm.weight",
                           "blk.{}.post_ffw_norm.weight"};
  RETURN_IF_ERROR(
      model->BindWeights(names, [&](absl::string_view name) -> absl::StatusOr<TensorView> {
        if (file.FindTensorInfo(name) == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(path, ": tensor '", name, "' is missing"));
        }
        return file.GetTensor(name);
      }));
  for (const GgufTensorInfo& t : file.tensors()) RETURN_IF_ERROR(model->CheckUsed(path, t.name));
  return model;
}

}  // namespace tandem
