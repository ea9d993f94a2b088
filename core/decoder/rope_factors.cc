#include "core/decoder/rope_factors.h"

#include <cmath>

namespace tandem {

std::vector<float> Llama3RopeFactors(int64_t rot_dim, float base, const Llama3RopeScaling& s) {
  const double low_freq_wavelen = s.original_context / s.low_freq_factor;
  const double high_freq_wavelen = s.original_context / s.high_freq_factor;
  std::vector<float> factors;
  for (int64_t i = 0; i < rot_dim; i += 2) {
    // freq = 1 / base^(i / rot_dim), a float32 value in the converter.
    const float freq = static_cast<float>(
        1.0 / std::pow(double{base}, static_cast<double>(static_cast<float>(i) / rot_dim)));
    const double wavelen = 2 * M_PI / freq;
    if (wavelen < high_freq_wavelen) {
      factors.push_back(1.0f);
    } else if (wavelen > low_freq_wavelen) {
      factors.push_back(static_cast<float>(s.factor));
    } else {
      const double smooth = (s.original_context / wavelen - s.low_freq_factor) /
                            (s.high_freq_factor - s.low_freq_factor);
      factors.push_back(static_cast<float>(1.0 / ((1 - smooth) / s.factor + smooth)));
    }
  }
  return factors;
}

}  // namespace tandem
