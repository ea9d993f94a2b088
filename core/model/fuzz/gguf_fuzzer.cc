// libFuzzer entry point for the GGUF reader: parse, then touch everything a loader would.
// Built as a fuzzer with -DTANDEM_FUZZ=ON (clang); otherwise gguf_fuzzer_replay_test runs it
// over generated hostile inputs.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/model/gguf_reader.h"
#include "core/model/mapped_file.h"
#include "core/model/tensor_type.h"

namespace tandem {
namespace {

void ExerciseMetadata(const GgufFile& gguf) {
  for (const GgufKeyValue& kv : gguf.metadata()) {
    (void)gguf.GetString(kv.key);
    (void)gguf.GetBool(kv.key);
    (void)gguf.GetUint32(kv.key);
    (void)gguf.GetInt32(kv.key);
    (void)gguf.GetUint64(kv.key);
    (void)gguf.GetInt64(kv.key);
    (void)gguf.GetFloat32(kv.key);
    (void)gguf.GetFloat64(kv.key);
    (void)gguf.GetArray(kv.key);
    (void)gguf.GetStringArray(kv.key);
    (void)gguf.GetFloat32Array(kv.key);
    (void)gguf.GetInt32Array(kv.key);
  }
}

// Dequantises every row, so every byte a view claims is read (ASan checks the bounds).
float ExerciseTensors(const GgufFile& gguf) {
  float sum = 0;
  std::vector<float> row;
  for (const GgufTensorInfo& info : gguf.tensors()) {
    absl::StatusOr<TensorView> view = gguf.GetTensor(info.name);
    if (!view.ok() || view->num_rows() == 0) continue;
    row.resize(static_cast<size_t>(view->row_length()));
    const size_t row_bytes = view->num_bytes / static_cast<size_t>(view->num_rows());
    for (int64_t r = 0; r < view->num_rows(); ++r) {
      const absl::Span<const uint8_t> src(view->data + r * row_bytes, row_bytes);
      if (DequantizeRow(view->type, src, absl::MakeSpan(row)).ok()) sum += row[0];
    }
  }
  return sum;
}

}  // namespace
}  // namespace tandem

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<tandem::GgufFile> gguf =
      tandem::GgufFile::Parse(tandem::MappedFile::FromBuffer({data, size}, "fuzz-input"));
  if (!gguf.ok()) return 0;
  tandem::ExerciseMetadata(*gguf);
  volatile float sink = tandem::ExerciseTensors(*gguf);
  (void)sink;
  return 0;
}
