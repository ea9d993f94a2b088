// Test-only: safetensors files from a header text and a data buffer.
#ifndef TANDEM_CORE_MODEL_SAFETENSORS_BUILDER_TEST_UTIL_H_
#define TANDEM_CORE_MODEL_SAFETENSORS_BUILDER_TEST_UTIL_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"

namespace tandem::testing {

// u64 little-endian length of `header`, `header`, then `data`.
std::vector<uint8_t> SafetensorsBytes(absl::string_view header, absl::string_view data);

}  // namespace tandem::testing

#endif  // TANDEM_CORE_MODEL_SAFETENSORS_BUILDER_TEST_UTIL_H_
