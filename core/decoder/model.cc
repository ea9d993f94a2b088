#include "core/decoder/model.h"

#include <cmath>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/types/span.h"
#include "core/base/status_macros.h"
#include "core/model/mapped_file.h"

namespace tandem {
namespace {

std::string ForLayer(const std::string& pattern, int64_t layer) {
  return absl::StrReplaceAll(pattern, {{"{}", absl::StrCat(layer)}});
}

// Rows [first, first + rows) of `m` as a matrix of their own.
WeightMatrix RowSlice(const WeightMatrix& m, int64_t first, int64_t rows) {
  return WeightMatrix{m.type, rows, m.cols, m.data + first * m.row_bytes, m.row_bytes};
}

std::string ShapeString(int64_t rows, int64_t cols) {
  return absl::StrCat("[", rows, ", ", cols, "]");
}

}  // namespace

absl::StatusOr<std::unique_ptr<Model>> Model::Load(const std::string& path,
                                                   const ModelLoadOptions& options) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    return absl::NotFoundError(absl::StrCat("model path not found: ", path));
  }
  absl::StatusOr<std::unique_ptr<Model>> model =
      std::filesystem::is_directory(path, error) ? LoadHfModel(path) : LoadGgufModel(path);
  if (!model.ok()) return model;
  RETURN_IF_ERROR((*model)->PackMatrices(options.activations));
  return model;
}

namespace {

// The file is named too: a model folder has several, and a user may run several models.
absl::Status CheckSupportedIn(const std::string& path, TensorType type, const std::string& name) {
  absl::Status supported = CheckSupported(type, name);
  if (supported.ok()) return supported;
  return absl::Status(supported.code(), absl::StrCat(path, ": ", supported.message()));
}

}  // namespace

absl::StatusOr<WeightMatrix> Model::BindMatrix(const TensorLookup& lookup, const std::string& name,
                                               int64_t rows, int64_t cols) {
  ASSIGN_OR_RETURN(TensorView t, lookup(name));
  if (t.ne.size() != 2 || t.ne[0] != cols || t.ne[1] != rows) {
    std::string got = "[";
    for (size_t i = t.ne.size(); i-- > 0;) absl::StrAppend(&got, t.ne[i], i ? ", " : "");
    return absl::InvalidArgumentError(absl::StrCat(path_, ": tensor '", name, "' has shape ", got,
                                                   "], expected ", ShapeString(rows, cols)));
  }
  RETURN_IF_ERROR(CheckSupportedIn(path_, t.type, name));
  ASSIGN_OR_RETURN(int64_t row_bytes, RowBytes(t.type, cols));
  parameter_count_ += rows * cols;
  return WeightMatrix{t.type, rows, cols, t.data, row_bytes};
}

absl::Status Model::PackMatrices(ActivationPrecision activations) {
  // The embedding stays in row layout only (rows are looked up per token); the output
  // projection, even when tied to it, gets a packed copy.
  std::vector<WeightMatrix*> matrices = {&output_};
  for (LayerWeights& l : layers_) {
    for (WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      matrices.push_back(m);
    }
  }
  token_embedding_.activations = activations;
  for (WeightMatrix* m : matrices) m->activations = activations;
  // Each matrix starts on a 64-byte boundary: its panels then never straddle cache lines
  // more than they must.
  auto slice_bytes = [](const WeightMatrix& m) { return (PackedBytes(m) + 63) / 64 * 64; };
  int64_t total = 0;
  for (const WeightMatrix* m : matrices) {
    if (PacksOnThisCpu(m->type)) total += slice_bytes(*m);
  }
  if (total == 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(packed_, PackedArena::Create(total));
  uint8_t* next = packed_.data();
  for (WeightMatrix* m : matrices) {
    if (!PacksOnThisCpu(m->type)) continue;
    m->int8_panels = UsesInt8Panels(*m);
    PackMatrix(*m, next);
    m->packed = next;
    next += slice_bytes(*m);
    // The kernels now read only the packed copy: let the file's pages go (they come back
    // from the file if anything reads the rows again), so the weights are not held twice.
    // That includes a tied embedding: packing read all of it, but a token's lookup reads one
    // row, so only the rows of tokens in use come back.
    ReleaseResidentPages(m->data, m->rows * m->row_bytes);
  }
  packed_bytes_ = total;
  return absl::OkStatus();
}

absl::StatusOr<const float*> Model::BindVector(const TensorLookup& lookup, const std::string& name,
                                               int64_t size) {
  ASSIGN_OR_RETURN(TensorView t, lookup(name));
  if (t.ne.size() != 1 || t.ne[0] != size) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": tensor '", name, "' has ",
                                                   t.num_elements, " elements in ", t.ne.size(),
                                                   " dimensions, expected [", size, "]"));
  }
  RETURN_IF_ERROR(CheckSupportedIn(path_, t.type, name));
  std::vector<float>& v = vectors_.emplace_back(size);
  RETURN_IF_ERROR(
      DequantizeRow(t.type, absl::MakeConstSpan(t.data, t.num_bytes), absl::MakeSpan(v)));
  parameter_count_ += size;
  return v.data();
}

absl::Status Model::CheckUsed(const std::string& file, absl::string_view tensor) const {
  if (used_.find(tensor) != used_.end()) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(file, ": tensor '", tensor,
                                               "' is not used by Tandem's '", config_.architecture,
                                               "' model (refused rather than ignored)"));
}

absl::StatusOr<const float*> Model::BindNorm(const TensorLookup& lookup, const std::string& name,
                                             int64_t size) {
  ASSIGN_OR_RETURN(const float* weight, BindVector(lookup, name, size));
  if (names_norm_offset_ != 0) {
    for (float& w : vectors_.back()) w += names_norm_offset_;
  }
  return weight;
}

absl::Status Model::BindFused(const TensorNames& names, const TensorLookup& lookup, int64_t layer,
                              LayerWeights* l) {
  const ModelConfig& c = config_;
  ASSIGN_OR_RETURN(WeightMatrix qkv, BindMatrix(lookup, ForLayer(names.wqkv, layer),
                                                c.q_dim() + 2 * c.kv_dim(), c.dim));
  l->wq = RowSlice(qkv, 0, c.q_dim());
  l->wk = RowSlice(qkv, c.q_dim(), c.kv_dim());
  l->wv = RowSlice(qkv, c.q_dim() + c.kv_dim(), c.kv_dim());
  ASSIGN_OR_RETURN(WeightMatrix gate_up,
                   BindMatrix(lookup, ForLayer(names.w_gate_up, layer), 2 * c.ffn_dim, c.dim));
  l->w_gate = RowSlice(gate_up, 0, c.ffn_dim);
  l->w_up = RowSlice(gate_up, c.ffn_dim, c.ffn_dim);
  return absl::OkStatus();
}

absl::Status Model::BindWeights(const TensorNames& names, const TensorLookup& file_lookup) {
  const ModelConfig& c = config_;
  names_norm_offset_ = names.norm_offset;
  const TensorLookup lookup = [&](absl::string_view name) {
    used_.insert(std::string(name));
    return file_lookup(name);
  };
  ASSIGN_OR_RETURN(token_embedding_,
                   BindMatrix(lookup, names.token_embedding, c.vocab_size, c.dim));
  if (c.tied_output) {
    output_ = token_embedding_;
  } else {
    ASSIGN_OR_RETURN(output_, BindMatrix(lookup, names.output, c.vocab_size, c.dim));
  }
  ASSIGN_OR_RETURN(const float* norm, BindNorm(lookup, names.output_norm, c.dim));
  if (c.rope_freq_factors && !names.rope_freqs.empty()) {
    ASSIGN_OR_RETURN(const float* f, BindVector(lookup, names.rope_freqs, c.rope_dim / 2));
    rope_factors_.assign(f, f + c.rope_dim / 2);
    parameter_count_ -= c.rope_dim / 2;  // derived from the config, not learned
  } else if (c.rope_freq_factors) {
    rope_factors_ = Llama3RopeFactors(c.rope_dim, c.rope_base, c.llama3_rope);
  }
  for (size_t i = 0; i < rope_factors_.size(); ++i) {
    if (!(rope_factors_[i] > 0) || !std::isfinite(rope_factors_[i])) {
      return absl::InvalidArgumentError(absl::StrCat(path_, ": RoPE frequency factor ", i, " is ",
                                                     rope_factors_[i], " (", names.rope_freqs,
                                                     ")"));
    }
  }
  output_norm_.assign(norm, norm + c.dim);
  layers_.resize(c.n_layers);
  for (int64_t i = 0; i < c.n_layers; ++i) {
    LayerWeights& l = layers_[i];
    auto name = [&](const std::string& pattern) { return ForLayer(pattern, i); };
    ASSIGN_OR_RETURN(l.attn_norm, BindNorm(lookup, name(names.attn_norm), c.dim));
    if (c.fused_projections) {
      RETURN_IF_ERROR(BindFused(names, lookup, i, &l));
    } else {
      ASSIGN_OR_RETURN(l.wq, BindMatrix(lookup, name(names.wq), c.q_dim(), c.dim));
      ASSIGN_OR_RETURN(l.wk, BindMatrix(lookup, name(names.wk), c.kv_dim(), c.dim));
      ASSIGN_OR_RETURN(l.wv, BindMatrix(lookup, name(names.wv), c.kv_dim(), c.dim));
      ASSIGN_OR_RETURN(l.w_gate, BindMatrix(lookup, name(names.w_gate), c.ffn_dim, c.dim));
      ASSIGN_OR_RETURN(l.w_up, BindMatrix(lookup, name(names.w_up), c.ffn_dim, c.dim));
    }
    ASSIGN_OR_RETURN(l.wo, BindMatrix(lookup, name(names.wo), c.dim, c.q_dim()));
    if (c.qkv_bias) {
      ASSIGN_OR_RETURN(l.bq, BindVector(lookup, name(names.bq), c.q_dim()));
      ASSIGN_OR_RETURN(l.bk, BindVector(lookup, name(names.bk), c.kv_dim()));
      ASSIGN_OR_RETURN(l.bv, BindVector(lookup, name(names.bv), c.kv_dim()));
    }
    if (c.qk_norm) {
      ASSIGN_OR_RETURN(l.q_norm, BindNorm(lookup, name(names.q_norm), c.head_dim));
      ASSIGN_OR_RETURN(l.k_norm, BindNorm(lookup, name(names.k_norm), c.head_dim));
    }
    ASSIGN_OR_RETURN(l.ffn_norm, BindNorm(lookup, name(names.ffn_norm), c.dim));
    if (c.gemma) {
      ASSIGN_OR_RETURN(l.post_attn_norm, BindNorm(lookup, name(names.post_attn_norm), c.dim));
      ASSIGN_OR_RETURN(l.post_ffn_norm, BindNorm(lookup, name(names.post_ffn_norm), c.dim));
    }
    ASSIGN_OR_RETURN(l.w_down, BindMatrix(lookup, name(names.w_down), c.dim, c.ffn_dim));
  }
  std::set<std::string> types;
  for (const LayerWeights& l : layers_) {
    for (const WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      types.insert(std::string(TensorTypeName(m->type)));
    }
  }
  weight_type_ = types.size() == 1 ? *types.begin() : "mixed";
  return absl::OkStatus();
}

}  // namespace tandem
