// libFuzzer entry point for the safetensors reader: parse, then read every tensor's bytes.
// Built as a fuzzer with -DTANDEM_FUZZ=ON (clang); otherwise safetensors_fuzzer_replay_test
// runs it over generated hostile inputs.
#include <cstddef>
#include <cstdint>

#include "core/model/mapped_file.h"
#include "core/model/safetensors_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<tandem::SafetensorsFile> file =
      tandem::SafetensorsFile::Parse(tandem::MappedFile::FromBuffer({data, size}, "fuzz-input"));
  if (!file.ok()) return 0;
  uint32_t checksum = 0;
  for (const tandem::SafetensorsTensorInfo& info : file->tensors()) {
    absl::StatusOr<tandem::TensorView> view = file->GetTensor(info.name);
    if (!view.ok()) continue;
    // Every byte the view claims is read, so ASan checks the parser's bounds.
    for (size_t i = 0; i < view->num_bytes; ++i) checksum += view->data[i];
  }
  volatile uint32_t sink = checksum;
  (void)sink;
  return 0;
}
