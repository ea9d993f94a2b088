// Seeds for the .npy reader's fuzzer: small valid files of every form the reader accepts
// (f4 and f8, versions 1.0 to 3.0, scalars, empty and 1- to 3-D shapes, Python 2 headers)
// and a few it refuses. Used by make_npy_seeds (libFuzzer's corpus) and the replay test.
#ifndef TANDEM_CLIENT_LOGITS_FUZZ_NPY_SEEDS_H_
#define TANDEM_CLIENT_LOGITS_FUZZ_NPY_SEEDS_H_

#include <cstdint>
#include <vector>

namespace tandem::fuzzing {

std::vector<std::vector<uint8_t>> NpySeeds();

}  // namespace tandem::fuzzing

#endif  // TANDEM_CLIENT_LOGITS_FUZZ_NPY_SEEDS_H_
