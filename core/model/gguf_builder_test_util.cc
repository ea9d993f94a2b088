#include "core/model/gguf_builder_test_util.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace tandem::testing {
namespace {

template <typename T>
std::string LittleEndian(T v) {
  std::string bytes(sizeof(T), '\0');
  std::memcpy(bytes.data(), &v, sizeof(T));  // the tests run on little-endian hosts only
  return bytes;
}

template <typename T>
std::string ArrayBytes(GgufValueType type, const std::vector<T>& values) {
  std::string bytes = U32Bytes(static_cast<uint32_t>(type)) + U64Bytes(values.size());
  for (const T& v : values) bytes += LittleEndian(v);
  return bytes;
}

}  // namespace

std::string U32Bytes(uint32_t v) { return LittleEndian(v); }
std::string U64Bytes(uint64_t v) { return LittleEndian(v); }
std::string GgufStringBytes(absl::string_view s) { return absl::StrCat(U64Bytes(s.size()), s); }
std::string F32Bytes(const std::vector<float>& values) {
  std::string bytes;
  for (float v : values) bytes += LittleEndian(v);
  return bytes;
}

GgufBuilder& GgufBuilder::SetMagic(uint32_t magic) {
  magic_ = magic;
  return *this;
}
GgufBuilder& GgufBuilder::SetVersion(uint32_t version) {
  version_ = version;
  return *this;
}
GgufBuilder& GgufBuilder::OverrideTensorCount(uint64_t count) {
  tensor_count_override_ = count;
  return *this;
}
GgufBuilder& GgufBuilder::OverrideMetadataCount(uint64_t count) {
  metadata_count_override_ = count;
  return *this;
}
GgufBuilder& GgufBuilder::SetAlignment(uint32_t alignment) {
  alignment_ = alignment;
  return AddUint32("general.alignment", alignment);
}

GgufBuilder& GgufBuilder::AddKey(absl::string_view key, GgufValueType type,
                                 absl::string_view value_bytes) {
  return AddRaw(key, static_cast<uint32_t>(type), value_bytes);
}
GgufBuilder& GgufBuilder::AddRaw(absl::string_view key, uint32_t type,
                                 absl::string_view value_bytes) {
  absl::StrAppend(&metadata_, GgufStringBytes(key), U32Bytes(type), value_bytes);
  ++metadata_count_;
  return *this;
}

GgufBuilder& GgufBuilder::AddUint8(absl::string_view key, uint8_t v) {
  return AddKey(key, GgufValueType::kUint8, LittleEndian(v));
}
GgufBuilder& GgufBuilder::AddInt8(absl::string_view key, int8_t v) {
  return AddKey(key, GgufValueType::kInt8, LittleEndian(v));
}
GgufBuilder& GgufBuilder::AddUint16(absl::string_view key, uint16_t v) {
  return AddKey(key, GgufValueType::kUint16, LittleEndian(v));
}
GgufBuilder& GgufBuilder::AddInt16(absl::string_view key, int16_t v) {
  return AddKey(key, GgufValueType::kInt16, LittleEndian(v));
}
GgufBuilder& GgufBuilder::AddUint32(absl::string_view key, uint32_t v) {
  return AddKey(key, GgufValueType::kUint32, LittleEndian(v));
}
GgufBuilder& GgufBuilder::AddInt32(absl::string_view key, int32_t v) {
  return AddKey(key, GgufValueType::kInt32, LittleEndian(v));
}
GgufBuilder& GgufBuilder::AddUint64(absl::string_view key, uint64_t v) {
  return AddKey(key, GgufValueType::kUint64, LittleEndian(v));
}
GgufBuilder& GgufBuilder::AddInt64(absl::string_view key, int64_t v) {
  return AddKey(key, GgufValueType::kInt64, LittleEndian(v));
}
GgufBuilder& GgufBuilder::AddFloat32(absl::string_view key, float v) {
  return AddKey(key, GgufValueType::kFloat32, LittleEndian(v));
}
GgufBuilder& GgufBuilder::AddFloat64(absl::string_view key, double v) {
  return AddKey(key, GgufValueType::kFloat64, LittleEndian(v));
}
GgufBuilder& GgufBuilder::AddBool(absl::string_view key, bool v) {
  return AddKey(key, GgufValueType::kBool, std::string(1, v ? '\1' : '\0'));
}
GgufBuilder& GgufBuilder::AddString(absl::string_view key, absl::string_view v) {
  return AddKey(key, GgufValueType::kString, GgufStringBytes(v));
}
GgufBuilder& GgufBuilder::AddStringArray(absl::string_view key, const std::vector<std::string>& v) {
  std::string bytes = U32Bytes(static_cast<uint32_t>(GgufValueType::kString)) + U64Bytes(v.size());
  for (const std::string& s : v) bytes += GgufStringBytes(s);
  return AddKey(key, GgufValueType::kArray, bytes);
}
GgufBuilder& GgufBuilder::AddFloat32Array(absl::string_view key, const std::vector<float>& v) {
  return AddKey(key, GgufValueType::kArray, ArrayBytes(GgufValueType::kFloat32, v));
}
GgufBuilder& GgufBuilder::AddInt32Array(absl::string_view key, const std::vector<int32_t>& v) {
  return AddKey(key, GgufValueType::kArray, ArrayBytes(GgufValueType::kInt32, v));
}

GgufBuilder& GgufBuilder::AddTensor(absl::string_view name, TensorType type,
                                    const std::vector<int64_t>& ne, absl::string_view data) {
  data_.resize((data_.size() + alignment_ - 1) / alignment_ * alignment_, '\0');
  std::vector<uint64_t> dims(ne.begin(), ne.end());
  AddTensorInfo(name, static_cast<uint32_t>(type), dims, data_.size());
  data_ += std::string(data);
  return *this;
}

GgufBuilder& GgufBuilder::AddTensorInfo(absl::string_view name, uint32_t type,
                                        const std::vector<uint64_t>& dims, uint64_t offset) {
  absl::StrAppend(&tensor_infos_, GgufStringBytes(name), U32Bytes(dims.size()));
  for (uint64_t d : dims) tensor_infos_ += U64Bytes(d);
  absl::StrAppend(&tensor_infos_, U32Bytes(type), U64Bytes(offset));
  ++tensor_count_;
  return *this;
}

GgufBuilder& GgufBuilder::AddRawTensorInfo(absl::string_view bytes) {
  tensor_infos_ += std::string(bytes);
  ++tensor_count_;
  return *this;
}

GgufBuilder& GgufBuilder::AppendData(absl::string_view data) {
  data_ += std::string(data);
  return *this;
}

std::string GgufBuilder::Header() const {
  return absl::StrCat(U32Bytes(magic_), U32Bytes(version_),
                      U64Bytes(tensor_count_override_.value_or(tensor_count_)),
                      U64Bytes(metadata_count_override_.value_or(metadata_count_)));
}

std::vector<uint8_t> GgufBuilder::Build() const {
  std::string bytes = absl::StrCat(Header(), metadata_, tensor_infos_);
  if (!data_.empty()) {
    bytes.resize((bytes.size() + alignment_ - 1) / alignment_ * alignment_, '\0');
    bytes += data_;
  }
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

}  // namespace tandem::testing
