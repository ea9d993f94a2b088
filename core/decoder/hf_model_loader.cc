// Loads a Llama-family model from a Hugging Face folder: config.json for the shape,
// *.safetensors (one file or shards with an index) for the weights, read in place.
// HF stores q/k rows for rotate_half RoPE, so the model runs with the half-pair layout.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"
#include "core/decoder/architecture.h"
#include "core/decoder/model.h"

namespace tandem {
namespace {

absl::StatusOr<json::Value> ReadJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<json::Value> value = json::Parse(text.str());
  if (!value.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", value.status().message()));
  }
  return value;
}

// Reads an integer field; `fallback` when absent or null (fallback < 0: required).
absl::StatusOr<int64_t> Int(const json::Object& config, const std::string& path, const char* key,
                            int64_t fallback) {
  const json::Value* v = config.Find(key);
  if (v == nullptr || v->is_null()) {
    if (fallback >= 0) return fallback;
    return absl::InvalidArgumentError(absl::StrCat(path, ": '", key, "' is missing"));
  }
  if (!v->is_int()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": '", key, "' is not an integer"));
  }
  return v->as_int();
}

absl::StatusOr<double> Number(const json::Object& config, const std::string& path, const char* key,
                              double fallback) {
  const json::Value* v = config.Find(key);
  if (v == nullptr || v->is_null()) return fallback;
  if (!v->is_number()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": '", key, "' is not a number"));
  }
  return v->as_double();
}

// rope_scaling: "linear" (positions divided by factor) or "llama3" (per-pair factors).
absl::Status ReadRopeScaling(const json::Object& s, const std::string& path, ModelConfig* c) {
  const json::Value* kind = s.Find("rope_type");
  if (kind == nullptr) kind = s.Find("type");
  const std::string type = kind != nullptr && kind->is_string() ? kind->as_string() : "";
  if (type == "linear") {
    ASSIGN_OR_RETURN(double factor, Number(s, path, "factor", 1.0));
    c->rope_scale = static_cast<float>(factor);
    return absl::OkStatus();
  }
  if (type != "llama3") {
    return absl::UnimplementedError(
        absl::StrCat(path, ": rope_scaling type '", type, "' is not supported (linear, llama3)"));
  }
  Llama3RopeScaling& l = c->llama3_rope;
  ASSIGN_OR_RETURN(l.factor, Number(s, path, "factor", l.factor));
  ASSIGN_OR_RETURN(l.low_freq_factor, Number(s, path, "low_freq_factor", l.low_freq_factor));
  ASSIGN_OR_RETURN(l.high_freq_factor, Number(s, path, "high_freq_factor", l.high_freq_factor));
  ASSIGN_OR_RETURN(l.original_context,
                   Int(s, path, "original_max_position_embeddings", l.original_context));
  if (!(l.factor >= 1) || !(l.low_freq_factor > 0) || !(l.high_freq_factor > l.low_freq_factor) ||
      l.original_context <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        ": rope_scaling llama3 needs factor >= 1 and 0 < low_freq_factor < high_freq_factor"
        " and original_max_position_embeddings > 0"));
  }
  c->rope_freq_factors = true;
  return absl::OkStatus();
}

// The sliding period from `layer_types` ("sliding_attention" / "full_attention" per layer),
// which must follow llama.cpp's rule (every period-th layer global).
absl::Status ReadLayerTypes(const json::Array& types, const std::string& path, ModelConfig* c) {
  int64_t period = 0;
  for (size_t i = 0; i < types.size() && period == 0; ++i) {
    if (types[i].is_string() && types[i].as_string() == "full_attention") period = i + 1;
  }
  c->sliding_pattern = period == 0 ? static_cast<int64_t>(types.size()) + 1 : period;
  for (size_t i = 0; i < types.size(); ++i) {
    const bool sliding = types[i].is_string() && types[i].as_string() == "sliding_attention";
    if (sliding != c->IsSlidingLayer(static_cast<int64_t>(i))) {
      return absl::UnimplementedError(absl::StrCat(
          path, ": layer_types[", i, "] breaks the period-", c->sliding_pattern, " pattern"));
    }
  }
  return absl::OkStatus();
}

// Gemma 2/3: query scale, soft-caps, sliding window and its pattern, the sliding RoPE base.
absl::Status ReadGemmaConfig(const json::Object& j, const std::string& path, ModelConfig* c) {
  ASSIGN_OR_RETURN(double scalar, Number(j, path, "query_pre_attn_scalar", c->head_dim));
  c->attn_scale = 1.0f / std::sqrt(static_cast<float>(scalar));
  ASSIGN_OR_RETURN(double attn_cap, Number(j, path, "attn_logit_softcapping", 0));
  ASSIGN_OR_RETURN(double final_cap, Number(j, path, "final_logit_softcapping", 0));
  c->attn_softcap = static_cast<float>(attn_cap);
  c->final_softcap = static_cast<float>(final_cap);
  ASSIGN_OR_RETURN(c->sliding_window, Int(j, path, "sliding_window", 0));
  ASSIGN_OR_RETURN(c->sliding_pattern, Int(j, path, "sliding_window_pattern", c->sliding_pattern));
  if (const json::Value* types = j.Find("layer_types"); types != nullptr && types->is_array()) {
    RETURN_IF_ERROR(ReadLayerTypes(types->as_array(), path, c));
  }
  if (c->architecture == "gemma3") {
    ASSIGN_OR_RETURN(double local_base, Number(j, path, "rope_local_base_freq", 10000.0));
    c->rope_base_swa = static_cast<float>(local_base);
  }
  const json::Value* act = j.Find("hidden_activation");
  if (act == nullptr || act->is_null()) act = j.Find("hidden_act");
  if (act != nullptr && act->is_string() && act->as_string() != "gelu_pytorch_tanh") {
    return absl::UnimplementedError(absl::StrCat(path, ": hidden_activation '", act->as_string(),
                                                 "' is not supported (gelu_pytorch_tanh)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelConfig> ConfigFromJson(const json::Object& j, const std::string& path) {
  ModelConfig c;
  const json::Value* type = j.Find("model_type");
  if (type == nullptr || !type->is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": 'model_type' is missing"));
  }
  const std::string& model_type = type->as_string();
  if (model_type == "llama" || model_type == "mistral") {
    c.architecture = "llama";
  } else if (model_type == "qwen2" || model_type == "qwen3" || model_type == "phi3" ||
             model_type == "gemma2") {
    c.architecture = model_type;
  } else if (model_type == "gemma3_text") {
    c.architecture = "gemma3";
  } else {
    return absl::UnimplementedError(absl::StrCat(path, ": model_type '", model_type,
                                                 "' is not supported (llama, mistral, qwen2, "
                                                 "qwen3, phi3, gemma2, gemma3_text)"));
  }
  RETURN_IF_ERROR(ApplyArchitecture(path, &c));
  c.name = std::filesystem::path(path).parent_path().filename().string();
  ASSIGN_OR_RETURN(c.vocab_size, Int(j, path, "vocab_size", -1));
  ASSIGN_OR_RETURN(c.dim, Int(j, path, "hidden_size", -1));
  ASSIGN_OR_RETURN(c.n_layers, Int(j, path, "num_hidden_layers", -1));
  ASSIGN_OR_RETURN(c.n_heads, Int(j, path, "num_attention_heads", -1));
  ASSIGN_OR_RETURN(c.n_kv_heads, Int(j, path, "num_key_value_heads", c.n_heads));
  ASSIGN_OR_RETURN(c.ffn_dim, Int(j, path, "intermediate_size", -1));
  if (c.n_heads <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": num_attention_heads ", c.n_heads));
  }
  ASSIGN_OR_RETURN(c.head_dim, Int(j, path, "head_dim", c.dim / c.n_heads));
  c.rope_dim = c.head_dim;
  ASSIGN_OR_RETURN(c.context_length, Int(j, path, "max_position_embeddings", 2048));
  ASSIGN_OR_RETURN(double eps, Number(j, path, "rms_norm_eps", 1e-6));
  ASSIGN_OR_RETURN(double theta, Number(j, path, "rope_theta", 10000.0));
  c.rms_eps = static_cast<float>(eps);
  c.rope_base = static_cast<float>(theta);
  c.rope_layout = RopeLayout::kHalf;  // HF q/k rows are in rotate_half order
  if (const json::Value* scaling = j.Find("rope_scaling");
      scaling != nullptr && scaling->is_object()) {
    const json::Object& s = scaling->as_object();
    RETURN_IF_ERROR(ReadRopeScaling(s, path, &c));
  }
  if (c.gemma) RETURN_IF_ERROR(ReadGemmaConfig(j, path, &c));
  const json::Value* tied = j.Find("tie_word_embeddings");
  c.tied_output = tied != nullptr && tied->is_bool() && tied->as_bool();
  RETURN_IF_ERROR(c.Validate());
  return c;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> LoadHfModel(const std::string& path) {
  const std::string config_path = (std::filesystem::path(path) / "config.json").string();
  ASSIGN_OR_RETURN(json::Value config, ReadJsonFile(config_path));
  if (!config.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(config_path, ": not a JSON object"));
  }
  std::unique_ptr<Model> model(new Model());
  model->path_ = path;
  ASSIGN_OR_RETURN(model->config_, ConfigFromJson(config.as_object(), config_path));
  ASSIGN_OR_RETURN(SafetensorsModel weights, SafetensorsModel::Open(path));
  model->safetensors_.emplace(std::move(weights));
  const SafetensorsModel& files = *model->safetensors_;
  // If an untied model's lm_head is absent, fall back to tying (as transformers does).
  if (!model->config_.tied_output && files.FindTensorInfo("lm_head.weight") == nullptr) {
    model->config_.tied_output = true;
  }
  Model::TensorNames names{"model.embed_tokens.weight",
                           "model.norm.weight",
                           "lm_head.weight",
                           "",
                           "model.layers.{}.input_layernorm.weight",
                           "model.layers.{}.self_attn.q_proj.weight",
                           "model.layers.{}.self_attn.k_proj.weight",
                           "model.layers.{}.self_attn.v_proj.weight",
                           "model.layers.{}.self_attn.o_proj.weight",
                           "model.layers.{}.self_attn.q_proj.bias",
                           "model.layers.{}.self_attn.k_proj.bias",
                           "model.layers.{}.self_attn.v_proj.bias",
                           "model.layers.{}.post_attention_layernorm.weight",
                           "model.layers.{}.mlp.gate_proj.weight",
                           "model.layers.{}.mlp.up_proj.weight",
                           "model.layers.{}.mlp.down_proj.weight",
                           "model.layers.{}.self_attn.q_norm.weight",
                           "model.layers.{}.self_attn.k_norm.weight",
                           "model.layers.{}.self_attn.qkv_proj.weight",
                           "model.layers.{}.mlp.gate_up_proj.weight",
                           "",
                           ""};
  if (model->config_.gemma) {  // Gemma names its four norms differently and stores w - 1
    names.ffn_norm = "model.layers.{}.pre_feedforward_layernorm.weight";
    names.post_attn_norm = "model.layers.{}.post_attention_layernorm.weight";
    names.post_ffn_norm = "model.layers.{}.post_feedforward_layernorm.weight";
    names.norm_offset = 1.0f;
  }
  RETURN_IF_ERROR(
      model->BindWeights(names, [&](absl::string_view name) -> absl::StatusOr<TensorView> {
        if (files.FindTensorInfo(name) == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(path, ": tensor '", name, "' is missing"));
        }
        return files.GetTensor(name);
      }));
  for (const SafetensorsFile& file : files.files()) {
    for (const SafetensorsTensorInfo& t : file.tensors()) {
      RETURN_IF_ERROR(model->CheckUsed(file.path(), t.name));
    }
  }
  return model;
}

}  // namespace tandem
