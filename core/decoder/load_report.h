// What a binary shows while it loads a model: on a terminal a progress bar of the bytes read,
// and in every case one summary line once loaded:
//
//   loaded /models/stories260K.gguf: llama, F32 x35 + 11 vectors, 1.1 MiB in 0.04 s
//
// The bar measures real I/O: on a terminal Prefetch reads the model's files once through the
// page cache (the loader maps them, so its page faults then find the pages resident); without
// one it only adds up their sizes, so a service's load is no slower. Not thread-safe; used by
// one main() thread.
#ifndef TANDEM_CORE_DECODER_LOAD_REPORT_H_
#define TANDEM_CORE_DECODER_LOAD_REPORT_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/decoder/model.h"

namespace tandem {

// The files a model path stands for: the .gguf file itself, or a folder's *.safetensors
// (sorted). kNotFound naming the path when there are none.
absl::StatusOr<std::vector<std::string>> ModelFiles(const std::string& path);

// The model's files exist and open as what they claim to be (a GGUF's header and tensor table,
// a safetensors file's header), without reading the weights: a quick check before a server
// binds its port. The open's own status (kNotFound, kInvalidArgument, ...) naming the file.
absl::Status CheckModelOpens(const std::string& path);

// The bytes of the model's files (their sizes). kNotFound naming a missing file.
absl::StatusOr<int64_t> ModelBytes(const std::string& path);

// Reads every file of `path` in chunks, calling `progress(done, total)` after each. Returns
// the total bytes. kNotFound / kPermissionDenied naming the file that cannot be read.
absl::StatusOr<int64_t> PrefetchModelFiles(
    const std::string& path, const std::function<void(int64_t done, int64_t total)>& progress);

// "F32 x35 + 11 vectors": the weight matrices by type, most common first.
std::string WeightTypeMix(const Model& model);

// The summary line (no newline).
std::string LoadSummary(const Model& model, int64_t bytes, double seconds);

// One model load as the user sees it, writing to `out` (stderr in the binaries).
class LoadReport {
 public:
  // `bar`: draw the progress bar (pass isatty(fileno(out))).
  LoadReport(std::string path, FILE* out, bool bar);
  // With the bar, reads the files; without, sums their sizes. An unreadable file is left for
  // the loader to report.
  void Prefetch();
  // Prints the summary line.
  void Loaded(const Model& model);

 private:
  void Draw(int64_t done, int64_t total);

  std::string path_;
  FILE* out_;
  bool bar_;
  int64_t bytes_ = 0;
  int last_permille_ = -1;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_DECODER_LOAD_REPORT_H_
