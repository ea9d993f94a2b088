// Inputs for the model-file fuzzers: small valid files and deterministic hostile variants.
// Used to seed libFuzzer (make_seed_corpus) and by the replay tests of the default build.
#ifndef TANDEM_CORE_MODEL_FUZZ_SEED_CORPUS_H_
#define TANDEM_CORE_MODEL_FUZZ_SEED_CORPUS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tandem::fuzzing {

using Input = std::vector<uint8_t>;

// Small GGUF files covering every value type, every supported tensor type, an unsupported
// one, custom alignment, v2 and v3.
std::vector<Input> GgufSeeds();
// Small safetensors files: F32/F16/BF16, unsupported dtypes, metadata, scalars.
std::vector<Input> SafetensorsSeeds();

// Every truncation of each seed shorter than `max_truncated` bytes, plus `per_seed` random
// corruptions of each (overwritten bytes, u64/u32 fields set to extreme values, inserted and
// deleted bytes) from a fixed `rng_seed`.
std::vector<Input> HostileVariants(const std::vector<Input>& seeds, int per_seed,
                                   size_t max_truncated, uint32_t rng_seed);

}  // namespace tandem::fuzzing

#endif  // TANDEM_CORE_MODEL_FUZZ_SEED_CORPUS_H_
