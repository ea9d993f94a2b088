// Llama 3 RoPE frequency factors ("rope_type": "llama3" in a Hugging Face config.json; the
// `rope_freqs.weight` tensor in GGUF files). Pair i's rotation frequency is divided by
// factor[i]: 1 for short wavelengths, `factor` for long ones, a smooth blend in between.
#ifndef TANDEM_CORE_DECODER_ROPE_FACTORS_H_
#define TANDEM_CORE_DECODER_ROPE_FACTORS_H_

#include <cstdint>
#include <vector>

namespace tandem {

struct Llama3RopeScaling {
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_context = 8192;  // original_max_position_embeddings
};

// The rot_dim / 2 factors, as convert_hf_to_gguf.py writes them to rope_freqs.weight
// (the frequencies base^(-2i / rot_dim) in float32, as the converter's torch code has them).
std::vector<float> Llama3RopeFactors(int64_t rot_dim, float base, const Llama3RopeScaling& s);

}  // namespace tandem

#endif  // TANDEM_CORE_DECODER_ROPE_FACTORS_H_
