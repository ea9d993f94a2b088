// A tensor's bytes inside a mapped model file, with its type and shape; nothing is copied.
#ifndef TANDEM_CORE_MODEL_TENSOR_VIEW_H_
#define TANDEM_CORE_MODEL_TENSOR_VIEW_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/model/tensor_type.h"

namespace tandem {

// Valid while the reader that returned it lives. `ne` is in ggml order, fastest dimension
// first: a matrix of `rows` rows of `cols` contiguous elements has ne = {cols, rows}, the
// reverse of the row-major shape PyTorch and safetensors print.
struct TensorView {
  absl::string_view name;
  TensorType type = TensorType::kF32;
  std::vector<int64_t> ne;        // 1..4 dimensions, ne[0] contiguous
  int64_t num_elements = 0;       // product of ne
  const uint8_t* data = nullptr;  // little-endian, no alignment promised beyond the file's
  size_t num_bytes = 0;

  // Elements per row (ne[0]) and number of rows (product of the other dimensions).
  int64_t row_length() const { return ne.empty() ? 1 : ne[0]; }
  int64_t num_rows() const { return row_length() == 0 ? 0 : num_elements / row_length(); }
};

}  // namespace tandem

#endif  // TANDEM_CORE_MODEL_TENSOR_VIEW_H_
