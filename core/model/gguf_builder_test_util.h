// Test-only: writes small GGUF files byte by byte, valid or deliberately broken, for the
// reader's tests, its fuzzer's seed corpus and the fuzz replay test.
//
//   std::vector<uint8_t> bytes = GgufBuilder()
//       .AddString("general.architecture", "llama")
//       .AddTensor("w", TensorType::kF32, {2, 3}, F32Bytes({1, 2, 3, 4, 5, 6}))
//       .Build();
#ifndef TANDEM_CORE_MODEL_GGUF_BUILDER_TEST_UTIL_H_
#define TANDEM_CORE_MODEL_GGUF_BUILDER_TEST_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/model/gguf_reader.h"
#include "core/model/tensor_type.h"

namespace tandem::testing {

// Little-endian encodings of single fields.
std::string U32Bytes(uint32_t v);
std::string U64Bytes(uint64_t v);
std::string GgufStringBytes(absl::string_view s);  // u64 length + bytes
std::string F32Bytes(const std::vector<float>& values);

class GgufBuilder {
 public:
  GgufBuilder& SetMagic(uint32_t magic);
  GgufBuilder& SetVersion(uint32_t version);
  // Writes these counts instead of the true ones.
  GgufBuilder& OverrideTensorCount(uint64_t count);
  GgufBuilder& OverrideMetadataCount(uint64_t count);

  // Adds `general.alignment` and pads the data section to it.
  GgufBuilder& SetAlignment(uint32_t alignment);

  GgufBuilder& AddUint8(absl::string_view key, uint8_t v);
  GgufBuilder& AddInt8(absl::string_view key, int8_t v);
  GgufBuilder& AddUint16(absl::string_view key, uint16_t v);
  GgufBuilder& AddInt16(absl::string_view key, int16_t v);
  GgufBuilder& AddUint32(absl::string_view key, uint32_t v);
  GgufBuilder& AddInt32(absl::string_view key, int32_t v);
  GgufBuilder& AddUint64(absl::string_view key, uint64_t v);
  GgufBuilder& AddInt64(absl::string_view key, int64_t v);
  GgufBuilder& AddFloat32(absl::string_view key, float v);
  GgufBuilder& AddFloat64(absl::string_view key, double v);
  GgufBuilder& AddBool(absl::string_view key, bool v);
  GgufBuilder& AddString(absl::string_view key, absl::string_view v);
  GgufBuilder& AddStringArray(absl::string_view key, const std::vector<std::string>& v);
  GgufBuilder& AddFloat32Array(absl::string_view key, const std::vector<float>& v);
  GgufBuilder& AddInt32Array(absl::string_view key, const std::vector<int32_t>& v);
  // A key with any type id followed by any bytes (for broken values).
  GgufBuilder& AddRaw(absl::string_view key, uint32_t type, absl::string_view value_bytes);

  // A tensor whose `data` goes at the next aligned offset of the data section.
  GgufBuilder& AddTensor(absl::string_view name, TensorType type, const std::vector<int64_t>& ne,
                         absl::string_view data);
  // A tensor info written as given; no data is added.
  GgufBuilder& AddTensorInfo(absl::string_view name, uint32_t type,
                             const std::vector<uint64_t>& dims, uint64_t offset);
  // Raw bytes counted as one tensor info (for broken ones).
  GgufBuilder& AddRawTensorInfo(absl::string_view bytes);
  // Appends raw bytes to the data section.
  GgufBuilder& AppendData(absl::string_view data);

  std::vector<uint8_t> Build() const;

 private:
  std::string Header() const;
  GgufBuilder& AddKey(absl::string_view key, GgufValueType type, absl::string_view value_bytes);

  uint32_t magic_ = 0x46554747;  // "GGUF"
  uint32_t version_ = 3;
  std::optional<uint64_t> tensor_count_override_;
  std::optional<uint64_t> metadata_count_override_;
  uint32_t alignment_ = 32;
  uint64_t metadata_count_ = 0;
  uint64_t tensor_count_ = 0;
  std::string metadata_;
  std::string tensor_infos_;
  std::string data_;
};

}  // namespace tandem::testing

#endif  // TANDEM_CORE_MODEL_GGUF_BUILDER_TEST_UTIL_H_
