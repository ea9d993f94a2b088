#include "client/logits/fuzz/npy_seeds.h"

#include <cmath>
#include <limits>
#include <string>

#include "client/logits/npy.h"

namespace tandem::fuzzing {
namespace {

// A file from its header dict and raw data, the header padded to 64 bytes as numpy does.
std::vector<uint8_t> File(const std::string& dict, const std::string& data, int major) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  out += header + data;
  return std::vector<uint8_t>(out.begin(), out.end());
}

std::string Doubles(const std::vector<double>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * 8);
}

}  // namespace

std::vector<std::vector<uint8_t>> NpySeeds() {
  std::vector<std::vector<uint8_t>> seeds;
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> f32 = {0.5f, -1.0f, inf, -inf, std::nanf(""), 3e-39f, 65504.0f, 2.0f};
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{8}, {2, 4}, {4, 2}, {1, 8}, {2, 2, 2}, {8, 1}}) {
    std::string bytes = *EncodeNpyF32(shape, f32);
    seeds.emplace_back(bytes.begin(), bytes.end());
  }
  std::string empty = *EncodeNpyF32({0, 512}, {});
  seeds.emplace_back(empty.begin(), empty.end());
  const std::string f64 = Doubles({0.1, -2.5, 1e300, -1e-310, 7, 8});
  seeds.push_back(File("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", f64, 1));
  seeds.push_back(File("{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", f64, 2));
  seeds.push_back(
      File("{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": (3L, 2L)}", f64, 3));
  seeds.push_back(File("{'descr': '<f8', 'fortran_order': True, 'shape': (), }", Doubles({42}), 1));
  seeds.push_back(
      File("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", f64.substr(0, 24), 1));
  seeds.push_back(File("{'descr': '<i8', 'fortran_order': False, 'shape': (6,), }", f64, 1));
  seeds.push_back(File("{'descr': '>f8', 'fortran_order': False, 'shape': (6,), }", f64, 1));
  return seeds;
}

}  // namespace tandem::fuzzing
