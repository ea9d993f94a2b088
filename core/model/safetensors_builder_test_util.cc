#include "core/model/safetensors_builder_test_util.h"

#include "core/model/gguf_builder_test_util.h"

namespace tandem::testing {

std::vector<uint8_t> SafetensorsBytes(absl::string_view header, absl::string_view data) {
  const std::string length = U64Bytes(header.size());  // same encoding as GGUF's u64
  std::vector<uint8_t> bytes(length.begin(), length.end());
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

}  // namespace tandem::testing
