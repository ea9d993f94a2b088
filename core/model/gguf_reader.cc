#include "core/model/gguf_reader.h"

#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/status_macros.h"

namespace tandem {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "GGUF is little-endian; the reader loads fields with memcpy on a little-endian host");

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr int kMaxDims = 4;
// Smallest encodings, used to bound counts by the bytes left: a key-value is a key length (8),
// a value type (4) and at least one value byte; a tensor info is a name length (8), n_dims (4),
// type (4) and offset (8).
constexpr uint64_t kMinKeyValueBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;

absl::Status Corrupt(absl::string_view message) { return absl::DataLossError(message); }

// Size in bytes of a fixed-size value type, 0 for string and array, -1 if unknown.
int ScalarSize(uint32_t type) {
  switch (static_cast<GgufValueType>(type)) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
      return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32:
      return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64:
      return 8;
    case GgufValueType::kString:
    case GgufValueType::kArray:
      return 0;
  }
  return -1;
}

// Decodes one fixed-size scalar of `type` at `p` (ScalarSize(type) > 0 bytes).
GgufValue DecodeScalar(GgufValueType type, const uint8_t* p) {
  auto load = [p](auto value) {
    std::memcpy(&value, p, sizeof(value));
    return value;
  };
  GgufValue value;
  value.type = type;
  switch (type) {
    case GgufValueType::kUint8:
      value.data = uint64_t{load(uint8_t{})};
      break;
    case GgufValueType::kInt8:
      value.data = int64_t{load(int8_t{})};
      break;
    case GgufValueType::kUint16:
      value.data = uint64_t{load(uint16_t{})};
      break;
    case GgufValueType::kInt16:
      value.data = int64_t{load(int16_t{})};
      break;
    case GgufValueType::kUint32:
      value.data = uint64_t{load(uint32_t{})};
      break;
    case GgufValueType::kInt32:
      value.data = int64_t{load(int32_t{})};
      break;
    case GgufValueType::kUint64:
      value.data = load(uint64_t{});
      break;
    case GgufValueType::kInt64:
      value.data = load(int64_t{});
      break;
    case GgufValueType::kFloat32:
      value.data = double{load(float{})};
      break;
    case GgufValueType::kFloat64:
      value.data = load(double{});
      break;
    case GgufValueType::kBool:
      value.data = (*p != 0);
      break;
    case GgufValueType::kString:
    case GgufValueType::kArray:
      break;  // not scalars; never passed here
  }
  return value;
}

// Bounds-checked little-endian reads over the file's bytes.
class Cursor {
 public:
  explicit Cursor(absl::Span<const uint8_t> bytes) : bytes_(bytes) {}

  uint64_t offset() const { return offset_; }
  uint64_t remaining() const { return bytes_.size() - offset_; }

  absl::StatusOr<absl::Span<const uint8_t>> Bytes(uint64_t n, absl::string_view what) {
    if (n > remaining()) {
      return Corrupt(absl::StrCat("truncated at offset ", offset_, ": ", what, " needs ", n,
                                  " bytes, ", remaining(), " left"));
    }
    absl::Span<const uint8_t> span = bytes_.subspan(offset_, n);
    offset_ += n;
    return span;
  }

  template <typename T>
  absl::StatusOr<T> Read(absl::string_view what) {
    ASSIGN_OR_RETURN(absl::Span<const uint8_t> span, Bytes(sizeof(T), what));
    T value;
    std::memcpy(&value, span.data(), sizeof(T));
    return value;
  }

  absl::StatusOr<absl::string_view> String(absl::string_view what) {
    const uint64_t start = offset_;
    ASSIGN_OR_RETURN(const uint64_t length, Read<uint64_t>(what));
    if (length > remaining()) {
      return Corrupt(absl::StrCat(what, " at offset ", start, " claims ", length, " bytes, only ",
                                  remaining(), " left"));
    }
    ASSIGN_OR_RETURN(absl::Span<const uint8_t> span, Bytes(length, what));
    return absl::string_view(reinterpret_cast<const char*>(span.data()), span.size());
  }

 private:
  absl::Span<const uint8_t> bytes_;
  uint64_t offset_ = 0;
};

}  // namespace

// Fills a GgufFile from its bytes; one instance per Parse().
class GgufParser {
 public:
  explicit GgufParser(GgufFile& gguf) : gguf_(gguf), cursor_(gguf.file_.bytes()) {}

  absl::Status Run() {
    uint64_t tensor_count = 0;
    uint64_t kv_count = 0;
    RETURN_IF_ERROR(ReadHeader(tensor_count, kv_count));
    for (uint64_t i = 0; i < kv_count; ++i) RETURN_IF_ERROR(ReadKeyValue(i));
    RETURN_IF_ERROR(ReadAlignment());
    for (uint64_t i = 0; i < tensor_count; ++i) RETURN_IF_ERROR(ReadTensorInfo(i));
    return PlaceTensors();
  }

 private:
  absl::Status ReadHeader(uint64_t& tensor_count, uint64_t& kv_count) {
    if (cursor_.remaining() < 4) {
      return Corrupt(absl::StrCat("file of ", cursor_.remaining(), " bytes is too short for GGUF"));
    }
    ASSIGN_OR_RETURN(const uint32_t magic, cursor_.Read<uint32_t>("magic"));
    if (magic != kMagic) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "not a GGUF file: magic is 0x%08x, want 0x%08x (\"GGUF\")", magic, kMagic));
    }
    ASSIGN_OR_RETURN(const uint32_t version, cursor_.Read<uint32_t>("version"));
    RETURN_IF_ERROR(CheckVersion(version));
    gguf_.version_ = version;
    ASSIGN_OR_RETURN(tensor_count, cursor_.Read<uint64_t>("tensor count"));
    ASSIGN_OR_RETURN(kv_count, cursor_.Read<uint64_t>("metadata count"));
    if (kv_count > cursor_.remaining() / kMinKeyValueBytes) {
      return Corrupt(absl::StrCat("metadata count ", kv_count, " cannot fit in the ",
                                  cursor_.remaining(), " bytes left"));
    }
    if (tensor_count > cursor_.remaining() / kMinTensorInfoBytes) {
      return Corrupt(absl::StrCat("tensor count ", tensor_count, " cannot fit in the ",
                                  cursor_.remaining(), " bytes left"));
    }
    return absl::OkStatus();
  }

  static absl::Status CheckVersion(uint32_t version) {
    if (version == 2 || version == 3) return absl::OkStatus();
    if (version == 1) {
      return absl::UnimplementedError(
          "GGUF version 1 is not supported (only 2 and 3); re-convert the model with a "
          "current llama.cpp");
    }
    if (version == 0x02000000 || version == 0x03000000) {
      return absl::UnimplementedError("big-endian GGUF files are not supported");
    }
    if (version == 0) return Corrupt("GGUF version 0 is invalid");
    return absl::UnimplementedError(
        absl::StrCat("GGUF version ", version, " is not supported (only 2 and 3)"));
  }

  absl::Status ReadKeyValue(uint64_t index) {
    const uint64_t start = cursor_.offset();
    ASSIGN_OR_RETURN(const absl::string_view key,
                     cursor_.String(absl::StrCat("key of metadata entry ", index)));
    const std::string what = absl::StrCat("metadata '", key, "'");
    ASSIGN_OR_RETURN(const uint32_t type, cursor_.Read<uint32_t>(what));
    if (!gguf_.metadata_index_.emplace(key, gguf_.metadata_.size()).second) {
      return Corrupt(absl::StrCat("duplicate ", what, " at offset ", start));
    }
    // Filled in place: a failed parse discards the whole GgufFile.
    GgufKeyValue& entry = gguf_.metadata_.emplace_back();
    entry.key = key;
    return ReadValue(type, what, start, entry.value);
  }

  absl::Status ReadValue(uint32_t type, absl::string_view what, uint64_t start, GgufValue& value) {
    const int size = ScalarSize(type);
    if (size < 0) {
      return Corrupt(absl::StrCat(what, " at offset ", start, " has unknown value type ", type));
    }
    value.type = static_cast<GgufValueType>(type);
    if (value.type == GgufValueType::kArray) {
      return ReadArray(what, start, value.data.emplace<GgufArray>());
    }
    if (value.type == GgufValueType::kString) {
      ASSIGN_OR_RETURN(value.data.emplace<absl::string_view>(), cursor_.String(what));
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(absl::Span<const uint8_t> bytes, cursor_.Bytes(size, what));
    if (value.type == GgufValueType::kBool && bytes[0] > 1) {
      return Corrupt(absl::StrCat(what, " at offset ", start, " has bool value ", int{bytes[0]}));
    }
    value = DecodeScalar(value.type, bytes.data());
    return absl::OkStatus();
  }

  absl::Status ReadArray(absl::string_view what, uint64_t start, GgufArray& array) {
    ASSIGN_OR_RETURN(const uint32_t element_type, cursor_.Read<uint32_t>(what));
    ASSIGN_OR_RETURN(const uint64_t count, cursor_.Read<uint64_t>(what));
    const int size = ScalarSize(element_type);
    if (size < 0) {
      return Corrupt(absl::StrCat(what, " at offset ", start, " is an array of unknown value type ",
                                  element_type));
    }
    array.element_type = static_cast<GgufValueType>(element_type);
    if (array.element_type == GgufValueType::kArray) {
      return absl::UnimplementedError(
          absl::StrCat(what, " at offset ", start, " is an array of arrays (not supported)"));
    }
    // Strings take at least their 8-byte length each.
    const uint64_t min_element_bytes = size == 0 ? 8 : size;
    if (count > cursor_.remaining() / min_element_bytes) {
      return Corrupt(absl::StrCat(what, " at offset ", start, " claims ", count, " elements, only ",
                                  cursor_.remaining(), " bytes left"));
    }
    array.size = count;
    if (array.element_type == GgufValueType::kString) {
      array.strings.reserve(count);
      for (uint64_t i = 0; i < count; ++i) {
        ASSIGN_OR_RETURN(absl::string_view text,
                         cursor_.String(absl::StrCat(what, " element ", i)));
        array.strings.push_back(text);
      }
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(array.raw, cursor_.Bytes(count * size, what));
    if (array.element_type == GgufValueType::kBool) {
      for (uint64_t i = 0; i < count; ++i) {
        if (array.raw[i] > 1) {
          return Corrupt(absl::StrCat(what, " element ", i, " has bool value ", int{array.raw[i]}));
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status ReadAlignment() {
    const GgufValue* value = gguf_.FindValue("general.alignment");
    if (value == nullptr) return absl::OkStatus();
    const uint64_t* alignment = std::get_if<uint64_t>(&value->data);
    if (value->type != GgufValueType::kUint32 || alignment == nullptr) {
      return Corrupt(absl::StrCat("general.alignment has type ", GgufValueTypeName(value->type),
                                  ", want uint32"));
    }
    if (*alignment == 0 || (*alignment & (*alignment - 1)) != 0) {
      return Corrupt(absl::StrCat("general.alignment ", *alignment, " is not a power of two"));
    }
    gguf_.alignment_ = *alignment;
    return absl::OkStatus();
  }

  absl::Status ReadTensorInfo(uint64_t index) {
    const uint64_t start = cursor_.offset();
    GgufTensorInfo info;
    ASSIGN_OR_RETURN(info.name, cursor_.String(absl::StrCat("name of tensor ", index)));
    const std::string what = absl::StrCat("tensor '", info.name, "' at offset ", start);
    ASSIGN_OR_RETURN(const uint32_t n_dims, cursor_.Read<uint32_t>(what));
    if (n_dims > kMaxDims) {
      return Corrupt(absl::StrCat(what, " has ", n_dims, " dimensions (at most 4)"));
    }
    info.num_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      ASSIGN_OR_RETURN(const uint64_t dim, cursor_.Read<uint64_t>(what));
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          (dim != 0 && static_cast<uint64_t>(info.num_elements) >
                           static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / dim)) {
        return Corrupt(
            absl::StrCat(what, ": dimension ", d, " (", dim, ") makes the element count overflow"));
      }
      info.ne.push_back(static_cast<int64_t>(dim));
      info.num_elements *= static_cast<int64_t>(dim);
    }
    ASSIGN_OR_RETURN(const uint32_t type_id, cursor_.Read<uint32_t>(what));
    ASSIGN_OR_RETURN(info.offset, cursor_.Read<uint64_t>(what));
    const std::optional<TensorTypeTraits> traits = TensorTypeFromId(type_id);
    if (!traits) {
      return absl::UnimplementedError(absl::StrCat(what, " has unknown ggml type id ", type_id));
    }
    info.type = traits->type;
    RETURN_IF_ERROR(ComputeBytes(info, what));
    if (!gguf_.tensor_index_.emplace(info.name, gguf_.tensors_.size()).second) {
      return Corrupt(absl::StrCat("duplicate ", what));
    }
    gguf_.tensors_.push_back(std::move(info));
    return absl::OkStatus();
  }

  static absl::Status ComputeBytes(GgufTensorInfo& info, absl::string_view what) {
    const int64_t row_length = info.ne.empty() ? 1 : info.ne[0];
    absl::StatusOr<int64_t> row_bytes = RowBytes(info.type, row_length);
    if (!row_bytes.ok()) {
      return Corrupt(absl::StrCat(what, ": ", row_bytes.status().message()));
    }
    const int64_t rows = row_length == 0 ? 0 : info.num_elements / row_length;
    // Overflow-safe: bytes = rows * row_bytes must fit int64 (and so the address space check
    // against the file size below is exact).
    if (rows != 0 && *row_bytes > std::numeric_limits<int64_t>::max() / rows) {
      return Corrupt(absl::StrCat(what, ": byte size overflows"));
    }
    info.num_bytes = static_cast<uint64_t>(rows * *row_bytes);
    return absl::OkStatus();
  }

  absl::Status PlaceTensors() {
    const uint64_t alignment = gguf_.alignment_;
    const uint64_t file_size = gguf_.file_.size();
    // The data section starts at the next multiple of the alignment (no overflow: the offset
    // is at most the file size and the alignment at most 2^31).
    gguf_.data_offset_ = (cursor_.offset() + alignment - 1) / alignment * alignment;
    for (const GgufTensorInfo& info : gguf_.tensors_) {
      if (info.offset % alignment != 0) {
        return Corrupt(absl::StrCat("tensor '", info.name, "' has data offset ", info.offset,
                                    ", not a multiple of the alignment ", alignment));
      }
      const uint64_t available =
          gguf_.data_offset_ > file_size ? 0 : file_size - gguf_.data_offset_;
      if (info.offset > available || info.num_bytes > available - info.offset ||
          gguf_.data_offset_ > file_size) {
        return Corrupt(absl::StrCat("tensor '", info.name, "' (", info.num_bytes,
                                    " bytes at data offset ", info.offset,
                                    ") runs past the end of the file (", file_size, " bytes)"));
      }
    }
    return absl::OkStatus();
  }

  GgufFile& gguf_;
  Cursor cursor_;
};

namespace {

absl::Status WrongType(absl::string_view key, const GgufValue& value, absl::string_view want) {
  return absl::InvalidArgumentError(absl::StrCat("metadata '", key, "' has type ",
                                                 GgufValueTypeName(value.type), ", want ", want));
}

// The value of an integer-typed `value` (bool is not an integer), widened.
std::optional<absl::int128> IntegerOf(const GgufValue& value) {
  if (const auto* u = std::get_if<uint64_t>(&value.data)) return absl::int128(*u);
  if (const auto* i = std::get_if<int64_t>(&value.data)) return absl::int128(*i);
  return std::nullopt;
}

// The integer element `i` of a numeric array, widened; nullopt if not an integer array.
std::optional<absl::int128> IntegerElement(const GgufArray& array, size_t i) {
  const int size = ScalarSize(static_cast<uint32_t>(array.element_type));
  if (size <= 0 || array.element_type == GgufValueType::kBool ||
      array.element_type == GgufValueType::kFloat32 ||
      array.element_type == GgufValueType::kFloat64) {
    return std::nullopt;
  }
  return IntegerOf(DecodeScalar(array.element_type, array.raw.data() + i * size));
}

// Every integer here came from a uint64 or an int64, so one of the two casts is exact.
std::string IntegerToString(absl::int128 v) {
  return v < 0 ? absl::StrCat(static_cast<int64_t>(v)) : absl::StrCat(static_cast<uint64_t>(v));
}

}  // namespace

absl::string_view GgufValueTypeName(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
      return "uint8";
    case GgufValueType::kInt8:
      return "int8";
    case GgufValueType::kUint16:
      return "uint16";
    case GgufValueType::kInt16:
      return "int16";
    case GgufValueType::kUint32:
      return "uint32";
    case GgufValueType::kInt32:
      return "int32";
    case GgufValueType::kFloat32:
      return "float32";
    case GgufValueType::kBool:
      return "bool";
    case GgufValueType::kString:
      return "string";
    case GgufValueType::kArray:
      return "array";
    case GgufValueType::kUint64:
      return "uint64";
    case GgufValueType::kInt64:
      return "int64";
    case GgufValueType::kFloat64:
      return "float64";
  }
  return "unknown";
}

const GgufValue* GgufFile::FindValue(absl::string_view key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].value;
}

namespace {

absl::StatusOr<const GgufValue*> Lookup(const GgufFile& gguf, absl::string_view key) {
  const GgufValue* value = gguf.FindValue(key);
  if (value == nullptr) {
    return absl::NotFoundError(absl::StrCat("no metadata '", key, "' in ", gguf.path()));
  }
  return value;
}

// An integer value of `key` in [min, max]; `want` names the requested type.
template <typename Int>
absl::StatusOr<Int> GetInteger(const GgufFile& gguf, absl::string_view key,
                               absl::string_view want) {
  ASSIGN_OR_RETURN(const GgufValue* value, Lookup(gguf, key));
  const std::optional<absl::int128> integer = IntegerOf(*value);
  if (!integer) return WrongType(key, *value, want);
  if (*integer < absl::int128(std::numeric_limits<Int>::min()) ||
      *integer > absl::int128(std::numeric_limits<Int>::max())) {
    return absl::InvalidArgumentError(
        absl::StrCat("metadata '", key, "' = ", IntegerToString(*integer), " does not fit ", want));
  }
  return static_cast<Int>(*integer);
}

}  // namespace

absl::StatusOr<absl::string_view> GgufFile::GetString(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* value, Lookup(*this, key));
  if (const auto* text = std::get_if<absl::string_view>(&value->data)) return *text;
  return WrongType(key, *value, "string");
}

absl::StatusOr<bool> GgufFile::GetBool(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* value, Lookup(*this, key));
  if (const auto* b = std::get_if<bool>(&value->data)) return *b;
  return WrongType(key, *value, "bool");
}

absl::StatusOr<uint32_t> GgufFile::GetUint32(absl::string_view key) const {
  return GetInteger<uint32_t>(*this, key, "uint32");
}
absl::StatusOr<int32_t> GgufFile::GetInt32(absl::string_view key) const {
  return GetInteger<int32_t>(*this, key, "int32");
}
absl::StatusOr<uint64_t> GgufFile::GetUint64(absl::string_view key) const {
  return GetInteger<uint64_t>(*this, key, "uint64");
}
absl::StatusOr<int64_t> GgufFile::GetInt64(absl::string_view key) const {
  return GetInteger<int64_t>(*this, key, "int64");
}

absl::StatusOr<float> GgufFile::GetFloat32(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* value, Lookup(*this, key));
  if (value->type != GgufValueType::kFloat32) return WrongType(key, *value, "float32");
  return static_cast<float>(std::get<double>(value->data));  // exact: it was a float
}

absl::StatusOr<double> GgufFile::GetFloat64(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* value, Lookup(*this, key));
  if (const auto* d = std::get_if<double>(&value->data)) return *d;
  return WrongType(key, *value, "float64 or float32");
}

absl::StatusOr<const GgufArray*> GgufFile::GetArray(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufValue* value, Lookup(*this, key));
  if (const auto* array = std::get_if<GgufArray>(&value->data)) return array;
  return WrongType(key, *value, "array");
}

absl::StatusOr<absl::Span<const absl::string_view>> GgufFile::GetStringArray(
    absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufArray* array, GetArray(key));
  if (array->element_type != GgufValueType::kString) {
    return absl::InvalidArgumentError(absl::StrCat("metadata '", key, "' is an array of ",
                                                   GgufValueTypeName(array->element_type),
                                                   ", want an array of string"));
  }
  return absl::MakeConstSpan(array->strings);
}

absl::StatusOr<std::vector<float>> GgufFile::GetFloat32Array(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufArray* array, GetArray(key));
  if (array->element_type != GgufValueType::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat("metadata '", key, "' is an array of ",
                                                   GgufValueTypeName(array->element_type),
                                                   ", want an array of float32"));
  }
  std::vector<float> result(array->size);
  if (!result.empty()) std::memcpy(result.data(), array->raw.data(), array->raw.size());
  return result;
}

absl::StatusOr<std::vector<int32_t>> GgufFile::GetInt32Array(absl::string_view key) const {
  ASSIGN_OR_RETURN(const GgufArray* array, GetArray(key));
  std::vector<int32_t> result;
  result.reserve(array->size);
  for (size_t i = 0; i < array->size; ++i) {
    const std::optional<absl::int128> element = IntegerElement(*array, i);
    if (!element) {
      return absl::InvalidArgumentError(absl::StrCat("metadata '", key, "' is an array of ",
                                                     GgufValueTypeName(array->element_type),
                                                     ", want an array of integers"));
    }
    if (*element < std::numeric_limits<int32_t>::min() ||
        *element > std::numeric_limits<int32_t>::max()) {
      return absl::InvalidArgumentError(absl::StrCat("metadata '", key, "' element ", i, " = ",
                                                     IntegerToString(*element),
                                                     " does not fit int32"));
    }
    result.push_back(static_cast<int32_t>(*element));
  }
  return result;
}

const GgufTensorInfo* GgufFile::FindTensorInfo(absl::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

absl::StatusOr<TensorView> GgufFile::GetTensor(absl::string_view name) const {
  const GgufTensorInfo* info = FindTensorInfo(name);
  if (info == nullptr) {
    return absl::NotFoundError(absl::StrCat("no tensor '", name, "' in ", path()));
  }
  if (absl::Status supported = CheckSupported(info->type, name); !supported.ok()) {
    return absl::Status(supported.code(), absl::StrCat(path(), ": ", supported.message()));
  }
  TensorView view;
  view.name = info->name;
  view.type = info->type;
  view.ne = info->ne;
  view.num_elements = info->num_elements;
  view.data = file_.data() + data_offset_ + info->offset;  // bounds checked by the parser
  view.num_bytes = info->num_bytes;
  return view;
}

absl::StatusOr<GgufFile> GgufFile::Open(const std::string& path) {
  ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  return Parse(std::move(file));
}

absl::StatusOr<GgufFile> GgufFile::Parse(MappedFile file) {
  GgufFile gguf(std::move(file));
  absl::Status status = GgufParser(gguf).Run();
  if (!status.ok()) {
    return absl::Status(status.code(), absl::StrCat(gguf.path(), ": ", status.message()));
  }
  return gguf;
}

}  // namespace tandem
