// The architectures Tandem runs, by their GGUF names, and what each implies for the forward
// pass beyond the shape (RoPE pairing, biases, q/k norms): filled in once per config.
#ifndef TANDEM_CORE_DECODER_ARCHITECTURE_H_
#define TANDEM_CORE_DECODER_ARCHITECTURE_H_

#include <string>

#include "absl/status/status.h"
#include "core/decoder/model_config.h"

namespace tandem {

// The supported GGUF architecture names, for messages: "llama, qwen2, ...".
const std::string& SupportedArchitectures();

// Sets config->rope_layout (as llama.cpp pairs the GGUF rows), qkv_bias, qk_norm and
// fused_projections from config->architecture. kUnimplemented naming `file` and the architecture
// when unknown.
absl::Status ApplyArchitecture(const std::string& file, ModelConfig* config);

}  // namespace tandem

#endif  // TANDEM_CORE_DECODER_ARCHITECTURE_H_
