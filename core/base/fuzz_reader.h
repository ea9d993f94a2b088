// Reads structured values from fuzz bytes, front to back; past the end every read is zero, so
// any byte string decodes. For fuzz targets only.
#ifndef TANDEM_CORE_BASE_FUZZ_READER_H_
#define TANDEM_CORE_BASE_FUZZ_READER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>

namespace tandem::fuzzing {

class FuzzReader {
 public:
  FuzzReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool empty() const { return pos_ >= size_; }
  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  bool Bool() { return Byte() & 1; }
  template <typename T>
  T Raw() {
    uint8_t bytes[sizeof(T)];
    for (uint8_t& b : bytes) b = Byte();
    T value;
    std::memcpy(&value, bytes, sizeof(T));
    return value;
  }
  // One of `values`, chosen by one byte; one byte in eight says raw bytes of T follow instead.
  template <typename T>
  T Pick(std::initializer_list<T> values) {
    const uint8_t index = Byte();
    if (index < 224) return values.begin()[index % values.size()];
    return Raw<T>();
  }
  // One of `values`, chosen by one byte modulo their number.
  template <typename T>
  T Choose(std::initializer_list<T> values) {
    return values.begin()[Byte() % values.size()];
  }
  // Up to `max_size` raw bytes (the length is read first).
  std::string Bytes(size_t max_size) {
    const size_t n = Byte() % (max_size + 1);
    std::string out;
    for (size_t i = 0; i < n && !empty(); ++i) out.push_back(static_cast<char>(Byte()));
    return out;
  }
  // A float setting: ordinary and edge values (NaN, infinities, huge, tiny, negative).
  float Float() {
    constexpr float kInf = std::numeric_limits<float>::infinity();
    return Pick<float>({0.0f, 1.0f, 0.8f, 0.5f, 0.95f, 0.05f, 1e-38f, 1e-30f, 1e30f, 3e38f, -1.0f,
                        kInf, -kInf, std::numeric_limits<float>::quiet_NaN(), 1.0000001f,
                        0.9999999f, 1e-45f, 2.0f});
  }
  // An int32 setting: small values and edges.
  int32_t Int() {
    return Pick<int32_t>({0, 1, 2, 3, 4, 8, 16, 17, 63, 64, 65, -1, 511, 512, 513,
                          std::numeric_limits<int32_t>::max(),
                          std::numeric_limits<int32_t>::min()});
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace tandem::fuzzing

#endif  // TANDEM_CORE_BASE_FUZZ_READER_H_
