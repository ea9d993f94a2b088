#include "core/model/safetensors_reader.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/base/json.h"
#include "core/base/status_macros.h"

namespace tandem {
namespace {

struct Dtype {
  absl::string_view name;
  int64_t size;                    // bytes per element
  std::optional<TensorType> type;  // set when the readers can compute with it
};

// The dtypes of the safetensors format. Ones missing here are refused when requested.
constexpr Dtype kDtypes[] = {
    {"F32", 4, TensorType::kF32}, {"F16", 2, TensorType::kF16}, {"BF16", 2, TensorType::kBF16},
    {"F64", 8, std::nullopt},     {"I64", 8, std::nullopt},     {"U64", 8, std::nullopt},
    {"I32", 4, std::nullopt},     {"U32", 4, std::nullopt},     {"I16", 2, std::nullopt},
    {"U16", 2, std::nullopt},     {"I8", 1, std::nullopt},      {"U8", 1, std::nullopt},
    {"BOOL", 1, std::nullopt},    {"F8_E4M3", 1, std::nullopt}, {"F8_E5M2", 1, std::nullopt},
};

const Dtype* FindDtype(absl::string_view name) {
  for (const Dtype& dtype : kDtypes) {
    if (dtype.name == name) return &dtype;
  }
  return nullptr;
}

absl::Status Corrupt(absl::string_view message) { return absl::DataLossError(message); }

absl::Status WithPath(const absl::Status& status, absl::string_view path) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(path, ": ", status.message()));
}

// A JSON array of non-negative integers.
absl::StatusOr<std::vector<int64_t>> Naturals(const json::Value* value, absl::string_view what) {
  if (value == nullptr || !value->is_array()) {
    return Corrupt(absl::StrCat(what, " is missing or not an array"));
  }
  std::vector<int64_t> result;
  for (const json::Value& element : value->as_array()) {
    if (!element.is_int() || element.as_int() < 0) {
      return Corrupt(
          absl::StrCat(what, " holds ", json::Serialize(element), ", not a non-negative integer"));
    }
    result.push_back(element.as_int());
  }
  return result;
}

}  // namespace

// Reads the JSON header into a SafetensorsFile; one instance per Parse().
class SafetensorsHeaderParser {
 public:
  explicit SafetensorsHeaderParser(SafetensorsFile& file) : file_(file) {}

  absl::Status Run() {
    const uint64_t size = file_.file_.size();
    if (size < 8) {
      return Corrupt(absl::StrCat("file of ", size, " bytes is too short for safetensors"));
    }
    uint64_t header_bytes;
    std::memcpy(&header_bytes, file_.file_.data(), 8);  // little-endian host (as GGUF's reader)
    if (header_bytes > SafetensorsFile::kMaxHeaderBytes) {
      return Corrupt(absl::StrCat("header length ", header_bytes, " exceeds the limit of ",
                                  SafetensorsFile::kMaxHeaderBytes));
    }
    if (header_bytes > size - 8) {
      return Corrupt(absl::StrCat("header length ", header_bytes,
                                  " runs past the end of the file (", size, " bytes)"));
    }
    file_.data_offset_ = 8 + header_bytes;
    const absl::string_view text(reinterpret_cast<const char*>(file_.file_.data()) + 8,
                                 header_bytes);
    absl::StatusOr<json::Value> header = json::Parse(text);
    if (!header.ok()) {
      return Corrupt(absl::StrCat("header is not valid JSON: ", header.status().message()));
    }
    if (!header->is_object()) return Corrupt("header is not a JSON object");
    for (const auto& [name, entry] : header->as_object()) {
      if (name == "__metadata__") {
        RETURN_IF_ERROR(ReadMetadata(entry));
      } else {
        RETURN_IF_ERROR(ReadTensor(name, entry));
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status ReadMetadata(const json::Value& metadata) {
    if (!metadata.is_object()) return Corrupt("__metadata__ is not an object");
    for (const auto& [key, value] : metadata.as_object()) {
      if (!value.is_string()) {
        return Corrupt(absl::StrCat("__metadata__ '", key, "' is not a string"));
      }
      file_.metadata_.emplace_back(key, value.as_string());
    }
    return absl::OkStatus();
  }

  absl::Status ReadTensor(const std::string& name, const json::Value& entry) {
    const std::string what = absl::StrCat("tensor '", name, "'");
    if (!entry.is_object()) return Corrupt(absl::StrCat(what, " is not an object"));
    const json::Object& fields = entry.as_object();
    const json::Value* dtype = fields.Find("dtype");
    if (dtype == nullptr || !dtype->is_string()) {
      return Corrupt(absl::StrCat(what, " has no string dtype"));
    }
    SafetensorsTensorInfo info;
    info.name = name;
    info.dtype = dtype->as_string();
    ASSIGN_OR_RETURN(info.shape, Naturals(fields.Find("shape"), absl::StrCat(what, " shape")));
    ASSIGN_OR_RETURN(std::vector<int64_t> offsets,
                     Naturals(fields.Find("data_offsets"), absl::StrCat(what, " data_offsets")));
    if (offsets.size() != 2 || offsets[0] > offsets[1]) {
      return Corrupt(absl::StrCat(what, " data_offsets is not [begin, end] with begin <= end"));
    }
    info.begin = static_cast<uint64_t>(offsets[0]);
    info.end = static_cast<uint64_t>(offsets[1]);
    RETURN_IF_ERROR(CheckSize(info, what));
    // Names are unique: the JSON parser keeps one value per object key.
    file_.index_[name] = file_.tensors_.size();
    file_.tensors_.push_back(std::move(info));
    return absl::OkStatus();
  }

  // Checks the byte range against the buffer and, for a known dtype, against the shape.
  absl::Status CheckSize(SafetensorsTensorInfo& info, absl::string_view what) {
    const uint64_t buffer = file_.file_.size() - file_.data_offset_;
    if (info.end > buffer) {
      return Corrupt(absl::StrCat(what, " data_offsets [", info.begin, ", ", info.end,
                                  "] run past the end of the data (", buffer, " bytes)"));
    }
    info.num_elements = 1;
    for (int64_t dim : info.shape) {
      if (dim != 0 && info.num_elements > std::numeric_limits<int64_t>::max() / dim) {
        return Corrupt(absl::StrCat(what, " shape overflows the element count"));
      }
      info.num_elements *= dim;
    }
    const Dtype* dtype = FindDtype(info.dtype);
    if (dtype == nullptr) return absl::OkStatus();  // refused by GetTensor; range checked above
    if (info.num_elements > std::numeric_limits<int64_t>::max() / dtype->size ||
        static_cast<uint64_t>(info.num_elements * dtype->size) != info.end - info.begin) {
      return Corrupt(absl::StrCat(what, ": ", info.num_elements, " ", info.dtype,
                                  " elements do not take the ", info.end - info.begin,
                                  " bytes of its data_offsets"));
    }
    return absl::OkStatus();
  }

  SafetensorsFile& file_;
};

absl::StatusOr<SafetensorsFile> SafetensorsFile::Open(const std::string& path) {
  ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open(path));
  return Parse(std::move(file));
}

absl::StatusOr<SafetensorsFile> SafetensorsFile::Parse(MappedFile file) {
  SafetensorsFile result(std::move(file));
  RETURN_IF_ERROR(WithPath(SafetensorsHeaderParser(result).Run(), result.path()));
  return result;
}

const SafetensorsTensorInfo* SafetensorsFile::FindTensorInfo(absl::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

absl::StatusOr<TensorView> SafetensorsFile::GetTensor(absl::string_view name) const {
  const SafetensorsTensorInfo* info = FindTensorInfo(name);
  if (info == nullptr) {
    return absl::NotFoundError(absl::StrCat("no tensor '", name, "' in ", path()));
  }
  const Dtype* dtype = FindDtype(info->dtype);
  if (dtype == nullptr || !dtype->type.has_value()) {
    return absl::UnimplementedError(absl::StrCat("tensor '", name, "' in ", path(), " has dtype ",
                                                 info->dtype,
                                                 ", which is not supported (F32, F16, BF16 are)"));
  }
  TensorView view;
  view.name = info->name;
  view.type = *dtype->type;
  view.ne.assign(info->shape.rbegin(), info->shape.rend());
  view.num_elements = info->num_elements;
  view.data = file_.data() + data_offset_ + info->begin;  // range checked by the parser
  view.num_bytes = info->end - info->begin;
  return view;
}

namespace {

// A shard named by an index must sit beside it: a plain file name, no directories.
bool IsPlainFileName(absl::string_view name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find('/') == absl::string_view::npos && name.find('\0') == absl::string_view::npos;
}

}  // namespace

absl::StatusOr<SafetensorsModel> SafetensorsModel::Open(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::is_directory(path, error)) {
    const fs::path index = fs::path(path) / "model.safetensors.index.json";
    if (fs::exists(index, error)) return OpenIndex(index.string());
    const fs::path single = fs::path(path) / "model.safetensors";
    if (!fs::exists(single, error)) {
      return absl::NotFoundError(
          absl::StrCat("no model.safetensors or model.safetensors.index.json in ", path));
    }
    return Open(single.string());
  }
  if (absl::EndsWith(path, ".json")) return OpenIndex(path);
  ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::Open(path));
  SafetensorsModel model;
  for (const SafetensorsTensorInfo& info : file.tensors()) model.shard_of_[info.name] = 0;
  model.files_.push_back(std::move(file));
  return model;
}

absl::StatusOr<SafetensorsModel> SafetensorsModel::OpenIndex(const std::string& index_path) {
  ASSIGN_OR_RETURN(MappedFile index_file, MappedFile::Open(index_path));
  const absl::string_view text(reinterpret_cast<const char*>(index_file.data()), index_file.size());
  absl::StatusOr<json::Value> index = json::Parse(text);
  if (!index.ok()) {
    return Corrupt(absl::StrCat(index_path, ": not valid JSON: ", index.status().message()));
  }
  const json::Value* weight_map =
      index->is_object() ? index->as_object().Find("weight_map") : nullptr;
  if (weight_map == nullptr || !weight_map->is_object()) {
    return Corrupt(absl::StrCat(index_path, ": no weight_map object"));
  }
  std::set<std::string> shard_names;
  for (const auto& [tensor, shard] : weight_map->as_object()) {
    if (!shard.is_string() || !IsPlainFileName(shard.as_string())) {
      return Corrupt(absl::StrCat(index_path, ": tensor '", tensor, "' maps to ",
                                  json::Serialize(shard), ", not a file name beside the index"));
    }
    shard_names.insert(shard.as_string());
  }
  SafetensorsModel model;
  absl::flat_hash_map<std::string, size_t> shard_index;
  const std::filesystem::path dir = std::filesystem::path(index_path).parent_path();
  for (const std::string& shard : shard_names) {
    ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::Open((dir / shard).string()));
    shard_index[shard] = model.files_.size();
    model.files_.push_back(std::move(file));
  }
  for (const auto& [tensor, shard] : weight_map->as_object()) {
    const size_t i = shard_index[shard.as_string()];
    if (model.files_[i].FindTensorInfo(tensor) == nullptr) {
      return Corrupt(absl::StrCat(index_path, ": tensor '", tensor, "' is not in its shard ",
                                  shard.as_string()));
    }
    model.shard_of_[tensor] = i;
  }
  return model;
}

std::vector<std::string> SafetensorsModel::TensorNames() const {
  std::vector<std::string> names;
  names.reserve(shard_of_.size());
  for (const auto& [name, shard] : shard_of_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

const SafetensorsTensorInfo* SafetensorsModel::FindTensorInfo(absl::string_view name) const {
  auto it = shard_of_.find(name);
  return it == shard_of_.end() ? nullptr : files_[it->second].FindTensorInfo(name);
}

absl::StatusOr<TensorView> SafetensorsModel::GetTensor(absl::string_view name) const {
  auto it = shard_of_.find(name);
  if (it == shard_of_.end()) {
    return absl::NotFoundError(absl::StrCat("no tensor '", name, "' in the model's safetensors"));
  }
  return files_[it->second].GetTensor(name);
}

}  // namespace tandem
