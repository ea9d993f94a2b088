// Reads GGUF v2/v3 model files (llama.cpp's format) through a MappedFile, copying no weights.
//
//   ASSIGN_OR_RETURN(GgufFile gguf, GgufFile::Open(path));
//   ASSIGN_OR_RETURN(uint32_t n_embd, gguf.GetUint32("llama.embedding_length"));
//   ASSIGN_OR_RETURN(TensorView w, gguf.GetTensor("token_embd.weight"));  // w.data -> the map
//
// Layout: magic "GGUF", u32 version, u64 tensor count, u64 metadata count, the metadata
// (string key, u32 value type, value), the tensor infos (string name, u32 n_dims, u64 ne[n_dims],
// u32 ggml type, u64 offset), padding to `general.alignment` (default 32), tensor data.
// Strings are u64 length + bytes; everything is little-endian.
//
// Parsing validates everything before anything is used, so a hostile file never causes an
// out-of-bounds read: kInvalidArgument if the magic is wrong (not a GGUF file), kUnimplemented
// for GGUF v1, big-endian files or tensor type ids ggml does not define, kDataLoss for any
// other corruption (truncation, absurd counts or lengths, bad shapes, tensors outside the
// file, misaligned or duplicate tensors, unknown value types). Messages name the file and the
// culprit (key or tensor, byte offset).
//
// A parsed GgufFile is immutable and thread-safe.
#ifndef TANDEM_CORE_MODEL_GGUF_READER_H_
#define TANDEM_CORE_MODEL_GGUF_READER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/model/mapped_file.h"
#include "core/model/tensor_type.h"
#include "core/model/tensor_view.h"

namespace tandem {

enum class GgufValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
absl::string_view GgufValueTypeName(GgufValueType type);

// An array value; its elements stay in the file.
struct GgufArray {
  GgufValueType element_type = GgufValueType::kUint8;
  size_t size = 0;
  // Numeric and bool arrays: the `size` raw little-endian elements, unaligned.
  absl::Span<const uint8_t> raw;
  // String arrays: the `size` strings (views into the file).
  std::vector<absl::string_view> strings;
};

// A metadata value: unsigned types widen to uint64_t, signed ones to int64_t, float32/64 to
// double (exactly); `type` keeps the type the file used.
struct GgufValue {
  GgufValueType type = GgufValueType::kUint8;
  std::variant<uint64_t, int64_t, double, bool, absl::string_view, GgufArray> data;
};

struct GgufKeyValue {
  absl::string_view key;
  GgufValue value;
};

struct GgufTensorInfo {
  absl::string_view name;
  std::vector<int64_t> ne;  // ggml order, ne[0] contiguous; 0..4 entries
  TensorType type = TensorType::kF32;
  uint64_t offset = 0;       // from the start of the data section
  int64_t num_elements = 0;  // product of ne
  uint64_t num_bytes = 0;
};

class GgufFile {
 public:
  // Used when the file has no `general.alignment`.
  static constexpr uint64_t kDefaultAlignment = 32;

  static absl::StatusOr<GgufFile> Open(const std::string& path);
  // Parses an already mapped (or borrowed) file and keeps it.
  static absl::StatusOr<GgufFile> Parse(MappedFile file);

  GgufFile(GgufFile&&) = default;
  GgufFile& operator=(GgufFile&&) = default;

  const std::string& path() const { return file_.path(); }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  // File offset of the tensor data section.
  uint64_t data_offset() const { return data_offset_; }

  // Metadata in file order.
  const std::vector<GgufKeyValue>& metadata() const { return metadata_; }
  // nullptr if absent.
  const GgufValue* FindValue(absl::string_view key) const;
  bool HasKey(absl::string_view key) const { return FindValue(key) != nullptr; }

  // Typed getters: kNotFound if `key` is absent, kInvalidArgument (naming the key) if its
  // type is wrong or its value does not fit. Integer getters take any integer type whose
  // value fits; GetFloat64 also takes float32.
  absl::StatusOr<absl::string_view> GetString(absl::string_view key) const;
  absl::StatusOr<bool> GetBool(absl::string_view key) const;
  absl::StatusOr<uint32_t> GetUint32(absl::string_view key) const;
  absl::StatusOr<int32_t> GetInt32(absl::string_view key) const;
  absl::StatusOr<uint64_t> GetUint64(absl::string_view key) const;
  absl::StatusOr<int64_t> GetInt64(absl::string_view key) const;
  absl::StatusOr<float> GetFloat32(absl::string_view key) const;
  absl::StatusOr<double> GetFloat64(absl::string_view key) const;
  absl::StatusOr<const GgufArray*> GetArray(absl::string_view key) const;
  absl::StatusOr<absl::Span<const absl::string_view>> GetStringArray(absl::string_view key) const;
  // Copies: float32 elements, or integer elements that each fit int32.
  absl::StatusOr<std::vector<float>> GetFloat32Array(absl::string_view key) const;
  absl::StatusOr<std::vector<int32_t>> GetInt32Array(absl::string_view key) const;

  // Every tensor, in file order, whatever its type.
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  // nullptr if absent.
  const GgufTensorInfo* FindTensorInfo(absl::string_view name) const;
  // The tensor's bytes in the map: kNotFound if absent, kUnimplemented (naming tensor and
  // type) if its type is not supported.
  absl::StatusOr<TensorView> GetTensor(absl::string_view name) const;

 private:
  friend class GgufParser;
  explicit GgufFile(MappedFile file) : file_(std::move(file)) {}

  MappedFile file_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<GgufKeyValue> metadata_;
  absl::flat_hash_map<absl::string_view, size_t> metadata_index_;  // key -> metadata_ index
  std::vector<GgufTensorInfo> tensors_;
  absl::flat_hash_map<absl::string_view, size_t> tensor_index_;  // name -> tensors_ index
};

}  // namespace tandem

#endif  // TANDEM_CORE_MODEL_GGUF_READER_H_
