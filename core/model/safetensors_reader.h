// Reads Hugging Face safetensors weights through a MappedFile, copying no weights: one
// `model.safetensors`, or shards listed by `model.safetensors.index.json`.
//
//   ASSIGN_OR_RETURN(SafetensorsModel model, SafetensorsModel::Open("/models/hf"));
//   ASSIGN_OR_RETURN(TensorView w, model.GetTensor("model.embed_tokens.weight"));
//
// A file is: u64 little-endian header length N, N bytes of JSON header
//   {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [512, 64],
//    "data_offsets": [begin, end]}, ...}
// then the byte buffer the offsets index. Every offset is checked against the buffer and
// against shape x dtype size before a view is handed out, so a hostile file gives an error,
// never an out-of-bounds read: kDataLoss for a corrupt file (truncated, bad JSON, bad
// entries, offsets outside the buffer or disagreeing with the shape), kUnimplemented (naming
// tensor and dtype) when a tensor other than F32/F16/BF16 is requested. Messages name the file.
//
// Shapes: SafetensorsTensorInfo::shape is row-major as in the header ([512, 64]); the
// TensorView's `ne` is reversed into ggml order ([64, 512]) so GGUF and safetensors weights
// look alike to the loader.
//
// Parsed objects are immutable and thread-safe.
#ifndef TANDEM_CORE_MODEL_SAFETENSORS_READER_H_
#define TANDEM_CORE_MODEL_SAFETENSORS_READER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/model/mapped_file.h"
#include "core/model/tensor_view.h"

namespace tandem {

struct SafetensorsTensorInfo {
  std::string name;
  std::string dtype;           // as written: "F32", "BF16", "I64", ...
  std::vector<int64_t> shape;  // row-major, outermost first
  int64_t num_elements = 0;
  uint64_t begin = 0;  // byte range inside the data buffer
  uint64_t end = 0;
};

// One .safetensors file.
class SafetensorsFile {
 public:
  // The largest JSON header accepted (as the reference implementation does).
  static constexpr uint64_t kMaxHeaderBytes = 100 << 20;

  static absl::StatusOr<SafetensorsFile> Open(const std::string& path);
  static absl::StatusOr<SafetensorsFile> Parse(MappedFile file);

  SafetensorsFile(SafetensorsFile&&) = default;
  SafetensorsFile& operator=(SafetensorsFile&&) = default;

  const std::string& path() const { return file_.path(); }
  // Tensors in header order.
  const std::vector<SafetensorsTensorInfo>& tensors() const { return tensors_; }
  // `__metadata__`, in header order.
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }
  // File offset of the data buffer (8 + header length).
  uint64_t data_offset() const { return data_offset_; }

  // nullptr if absent.
  const SafetensorsTensorInfo* FindTensorInfo(absl::string_view name) const;
  // kNotFound if absent; kUnimplemented naming tensor and dtype unless F32, F16 or BF16.
  absl::StatusOr<TensorView> GetTensor(absl::string_view name) const;

 private:
  friend class SafetensorsHeaderParser;
  explicit SafetensorsFile(MappedFile file) : file_(std::move(file)) {}

  MappedFile file_;
  uint64_t data_offset_ = 0;
  std::vector<SafetensorsTensorInfo> tensors_;
  absl::flat_hash_map<std::string, size_t> index_;  // name -> tensors_ index
  std::vector<std::pair<std::string, std::string>> metadata_;
};

// A model's weights, in one file or in shards.
class SafetensorsModel {
 public:
  // `path` is a directory (holding model.safetensors.index.json or model.safetensors), an
  // index .json, or a single .safetensors file. kNotFound if there are no weights there;
  // kDataLoss for a corrupt index (not JSON, no weight_map, a shard name that is not a plain
  // file name, a tensor missing from the shard the index names).
  static absl::StatusOr<SafetensorsModel> Open(const std::string& path);

  SafetensorsModel(SafetensorsModel&&) = default;
  SafetensorsModel& operator=(SafetensorsModel&&) = default;

  // The shards, in the order of their file names.
  const std::vector<SafetensorsFile>& files() const { return files_; }
  // Every tensor name, sorted.
  std::vector<std::string> TensorNames() const;
  // nullptr if absent.
  const SafetensorsTensorInfo* FindTensorInfo(absl::string_view name) const;
  // As SafetensorsFile::GetTensor, from whichever shard holds it.
  absl::StatusOr<TensorView> GetTensor(absl::string_view name) const;

 private:
  SafetensorsModel() = default;
  static absl::StatusOr<SafetensorsModel> OpenIndex(const std::string& index_path);

  std::vector<SafetensorsFile> files_;
  absl::flat_hash_map<std::string, size_t> shard_of_;  // tensor name -> files_ index
};

}  // namespace tandem

#endif  // TANDEM_CORE_MODEL_SAFETENSORS_READER_H_
