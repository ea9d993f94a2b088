// The shape of a Llama-family decoder, filled once from GGUF metadata or config.json and
// validated once.
#ifndef TANDEM_CORE_DECODER_MODEL_CONFIG_H_
#define TANDEM_CORE_DECODER_MODEL_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "core/decoder/rope_factors.h"
#include "core/kernels/rope.h"

namespace tandem {

struct ModelConfig {
  std::string architecture;  // GGUF name: "llama", "qwen2", "qwen3" (architecture.h)
  std::string name;          // general.name or the folder name
  int64_t vocab_size = 0;
  int64_t dim = 0;  // hidden size
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;  // grouped-query attention: n_heads % n_kv_heads == 0
  int64_t head_dim = 0;    // usually dim / n_heads
  int64_t ffn_dim = 0;     // SwiGLU hidden size
  float rms_eps = 1e-5f;
  float rope_base = 10000.0f;
  float rope_scale = 1.0f;  // linear scaling: positions are divided by it
  int64_t rope_dim = 0;     // rotated elements per head (<= head_dim)
  RopeLayout rope_layout = RopeLayout::kInterleaved;
  // Llama 3 per-pair frequency factors: GGUF's rope_freqs.weight, or computed from
  // `llama3_rope` (HF rope_scaling) when the file has no such tensor.
  bool rope_freq_factors = false;
  Llama3RopeScaling llama3_rope;
  int64_t context_length = 0;  // trained context
  bool qkv_bias = false;       // qwen2
  bool qk_norm = false;        // qwen3: per-head RMSNorm of q and k before RoPE
  // phi3: the file holds one [q; k; v] matrix and one [gate; up] matrix (split on loading).
  bool fused_projections = false;
  bool tied_output = false;  // output projection shares the embedding
  // Gemma 2/3: embeddings × sqrt(dim), RMSNorm of the attention and FFN outputs before each
  // residual add (post_norms), FFN down(gelu_tanh(gate) · up).
  bool gemma = false;
  float attn_softcap = 0;   // gemma2: attention scores = cap · tanh(s / cap); 0: none
  float final_softcap = 0;  // gemma2: logits likewise
  // Sliding-window attention: on a sliding layer query i sees key j iff 0 <= i - j < window.
  // Layer l slides iff l % sliding_pattern < sliding_pattern - 1 (llama.cpp's rule).
  int64_t sliding_window = 0;  // 0: none
  int64_t sliding_pattern = 0;
  float rope_base_swa = 0;  // gemma3: the sliding layers' RoPE base (0: rope_base)
  float attn_scale = 0;     // scores = q·k × attn_scale; 0: 1 / sqrt(head_dim)

  bool IsSlidingLayer(int64_t layer) const {
    return sliding_window > 0 && sliding_pattern > 0 &&
           layer % sliding_pattern < sliding_pattern - 1;
  }

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }

  // kInvalidArgument naming the first inconsistent field.
  absl::Status Validate() const;
};

}  // namespace tandem

#endif  // TANDEM_CORE_DECODER_MODEL_CONFIG_H_
