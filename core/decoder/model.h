// A loaded Llama-family model: its config and views of its weights inside the mapped file(s).
// Load() reads a GGUF file or a Hugging Face folder (config.json + *.safetensors); both give
// the same logits for the same weights.
//
// A Model is immutable after loading and thread-safe; sessions share it.
#ifndef TANDEM_CORE_DECODER_MODEL_H_
#define TANDEM_CORE_DECODER_MODEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/decoder/model_config.h"
#include "core/kernels/matmul.h"
#include "core/kernels/packed_matrix.h"
#include "core/model/gguf_reader.h"
#include "core/model/safetensors_reader.h"
#include "core/model/tensor_view.h"

namespace tandem {

// The weights of one transformer block. Norms and biases are f32 copies; matrices point into
// the mapped file, plus a packed copy owned by the Model when this CPU's kernels use one.
// Matrix shapes are [out, in] (one output feature per row).
struct LayerWeights {
  const float* attn_norm = nullptr;       // [dim]
  WeightMatrix wq;                        // [q_dim, dim]
  WeightMatrix wk;                        // [kv_dim, dim]
  WeightMatrix wv;                        // [kv_dim, dim]
  WeightMatrix wo;                        // [dim, q_dim]
  const float* bq = nullptr;              // [q_dim], qwen2 only
  const float* bk = nullptr;              // [kv_dim]
  const float* bv = nullptr;              // [kv_dim]
  const float* q_norm = nullptr;          // [head_dim], qwen3 only
  const float* k_norm = nullptr;          // [head_dim]
  const float* post_attn_norm = nullptr;  // [dim], gemma only
  const float* ffn_norm = nullptr;        // [dim]
  const float* post_ffn_norm = nullptr;   // [dim], gemma only
  WeightMatrix w_gate;                    // [ffn_dim, dim]
  WeightMatrix w_up;                      // [ffn_dim, dim]
  WeightMatrix w_down;                    // [dim, ffn_dim]
};

// How a model is prepared for this process's kernels; one set of defaults, here.
struct ModelLoadOptions {
  // The integer matmuls' activation precision (matmul.h), e.g. from --activations.
  ActivationPrecision activations = ActivationPrecision::kInt16;
};

class Model {
 public:
  // `path` is a .gguf file or a folder with config.json. kNotFound for a missing path,
  // kDataLoss / kInvalidArgument for a corrupt or inconsistent file (naming the tensor or
  // key), kUnimplemented for an unsupported architecture or tensor type.
  static absl::StatusOr<std::unique_ptr<Model>> Load(const std::string& path,
                                                     const ModelLoadOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const std::string& path() const { return path_; }
  const WeightMatrix& token_embedding() const { return token_embedding_; }  // [vocab, dim]
  const float* output_norm() const { return output_norm_.data(); }          // [dim]
  const WeightMatrix& output() const { return output_; }                    // [vocab, dim]
  const LayerWeights& layer(int64_t i) const { return layers_[i]; }
  // [rope_dim / 2] RoPE frequency divisors, empty when the model has none.
  const std::vector<float>& rope_factors() const { return rope_factors_; }

  // The GGUF file for its tokenizer metadata, or null for a Hugging Face folder.
  const GgufFile* gguf() const { return gguf_ ? &*gguf_ : nullptr; }

  int64_t parameter_count() const { return parameter_count_; }
  // The matrices' type name ("F32", "Q8_0", ...) or "mixed".
  const std::string& weight_type() const { return weight_type_; }
  // Heap bytes of the matrices' packed copies (packed_matrix.h), 0 when none were made.
  int64_t packed_bytes() const { return packed_bytes_; }
  // The matrices' activation precision (ModelLoadOptions).
  ActivationPrecision activations() const { return output_.activations; }

  // Internal to the loaders: binds every weight given a tensor lookup and a naming scheme.
  struct TensorNames;
  using TensorLookup = std::function<absl::StatusOr<TensorView>(absl::string_view)>;
  absl::Status BindWeights(const TensorNames& names, const TensorLookup& lookup);
  // After BindWeights: kUnimplemented naming `file` and `tensor` when no weight was bound
  // to it (a tensor Tandem does not use would otherwise change nothing, silently).
  absl::Status CheckUsed(const std::string& file, absl::string_view tensor) const;

 private:
  friend absl::StatusOr<std::unique_ptr<Model>> LoadGgufModel(const std::string& path);
  friend absl::StatusOr<std::unique_ptr<Model>> LoadHfModel(const std::string& path);
  Model() = default;

  absl::StatusOr<WeightMatrix> BindMatrix(const TensorLookup& lookup, const std::string& name,
                                          int64_t rows, int64_t cols);
  // The fused matrices, split into views of their row ranges.
  absl::Status BindFused(const TensorNames& names, const TensorLookup& lookup, int64_t layer,
                         LayerWeights* l);
  // BindVector plus the naming scheme's norm_offset.
  absl::StatusOr<const float*> BindNorm(const TensorLookup& lookup, const std::string& name,
                                        int64_t size);
  absl::StatusOr<const float*> BindVector(const TensorLookup& lookup, const std::string& name,
                                          int64_t size);
  // Sets every matrix's activation precision, and gives the output projection and the layer
  // matrices packed copies in one arena, for the types this CPU's matmul reads packed (the
  // layout may depend on the precision).
  absl::Status PackMatrices(ActivationPrecision activations);

  ModelConfig config_;
  std::string path_;
  std::optional<GgufFile> gguf_;
  std::optional<SafetensorsModel> safetensors_;
  WeightMatrix token_embedding_;
  WeightMatrix output_;
  std::vector<float> output_norm_;
  std::vector<float> rope_factors_;
  std::vector<LayerWeights> layers_;
  std::vector<std::vector<float>> vectors_;  // owned f32 norms and biases
  std::set<std::string, std::less<>> used_;  // names of the tensors bound
  float names_norm_offset_ = 0;
  PackedArena packed_;  // the matrices' packed copies
  int64_t packed_bytes_ = 0;
  int64_t parameter_count_ = 0;
  std::string weight_type_;
};

// How a file format names the tensors; {} stands for the layer number.
struct Model::TensorNames {
  std::string token_embedding, output_norm, output;
  std::string rope_freqs;  // "" when the format has no such tensor (computed from the config)
  std::string attn_norm, wq, wk, wv, wo, bq, bk, bv, ffn_norm, w_gate, w_up, w_down;
  std::string q_norm, k_norm;
  std::string wqkv, w_gate_up;                // fused_projections
  std::string post_attn_norm, post_ffn_norm;  // gemma
  // Added to every norm weight on loading: 1 for Hugging Face Gemma files, which store
  // w - 1 (GGUF files have the 1 folded in).
  float norm_offset = 0;
};

absl::StatusOr<std::unique_ptr<Model>> LoadGgufModel(const std::string& path);
absl::StatusOr<std::unique_ptr<Model>> LoadHfModel(const std::string& path);

}  // namespace tandem

#endif  // TANDEM_CORE_DECODER_MODEL_H_
