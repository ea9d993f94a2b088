// Test-only: safetensors files from a header text and a data buffer.
#ifndef TANDEM_CORE_MODEL_SAFETENSORS_TEST_BUILDER_H_
#define TANDEM_CORE_MODEL_SAFETENSORS_TEST_BUILDER_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"

namespace tandem::testing {

// u64 little-endian length of `header`, `header`, then `data`.
std::vector<uint8_t> SafetensorsBytes(absl::string_view header, absl::string_view data);

}  // namespace tandem::testing

#endif  // TANDEM_CORE_MODEL_SAFETENSORS_TEST_BUILDER_H_
