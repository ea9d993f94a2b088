// NumPy .npy files of floating-point arrays: parsing (outside input: every malformed file is a
// status naming the file, never a crash) and writing float32 C-order arrays.
//
// Format (numpy.lib.format): the magic "\x93NUMPY", a version byte pair (1.0: a uint16 header
// length; 2.0 and 3.0: uint32), an ASCII header that is a Python dict literal with exactly the
// keys 'descr', 'fortran_order' and 'shape', padded with spaces and ended by '\n', then the raw
// data. Reading takes little-endian '<f4' and '<f8' in C order (the fixtures use '<f4');
// writing gives version 1.0, '<f4', fortran_order False, the header padded so that the data
// starts at a multiple of 64 bytes, as numpy.save writes it.
//
// Thread-safe: plain functions.
#ifndef TANDEM_CLIENT_LOGITS_NPY_H_
#define TANDEM_CLIENT_LOGITS_NPY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace tandem {

enum class NpyDtype { kF32, kF64 };

struct NpyArray {
  NpyDtype dtype = NpyDtype::kF32;
  std::vector<int64_t> shape;  // () for a scalar
  std::vector<double> values;  // product(shape) values in C order (f4 widened exactly)
};

// The largest file ParseNpy accepts as a whole (header and data): 4 GiB.
inline constexpr int64_t kMaxNpyBytes = int64_t{4} << 30;

// Parses the bytes of a .npy file; `name` (the path) prefixes every message.
// kDataLoss: a bad magic, header or dict, a shape that does not match the data's size;
// kUnimplemented: a valid file of another dtype, byte order or Fortran order.
absl::StatusOr<NpyArray> ParseNpy(absl::string_view bytes, absl::string_view name);

// Reads and parses `path`: kNotFound when it cannot be opened, else as ParseNpy.
absl::StatusOr<NpyArray> ReadNpy(const std::string& path);

// The bytes of a float32 C-order .npy of `shape` holding `values` (product(shape) of them).
// kInvalidArgument when the counts disagree or a dimension is negative.
absl::StatusOr<std::string> EncodeNpyF32(absl::Span<const int64_t> shape,
                                         absl::Span<const float> values);

// Writes EncodeNpyF32 to `path` (replacing it); kPermissionDenied/kInternal naming the path
// when it cannot be written.
absl::Status WriteNpyF32(const std::string& path, absl::Span<const int64_t> shape,
                         absl::Span<const float> values);

}  // namespace tandem

#endif  // TANDEM_CLIENT_LOGITS_NPY_H_
