#include "core/decoder/load_report.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/model/gguf_reader.h"
#include "core/model/safetensors_reader.h"
#include "core/model/tensor_type.h"

namespace tandem {
namespace {

std::string Mib(int64_t bytes) { return absl::StrFormat("%.1f MiB", bytes / 1048576.0); }

absl::Status ReadError(const std::string& file) {
  const std::string why = std::strerror(errno);
  if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(file, ": ", why));
  if (errno == EACCES) return absl::PermissionDeniedError(absl::StrCat(file, ": ", why));
  return absl::UnavailableError(absl::StrCat(file, ": ", why));
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ModelFiles(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error)) {
    if (!std::filesystem::exists(path, error)) {
      return absl::NotFoundError(absl::StrCat("model ", path, " does not exist"));
    }
    return std::vector<std::string>{path};
  }
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
    const std::string name = entry.path().string();
    if (absl::EndsWith(name, ".safetensors")) files.push_back(name);
  }
  if (files.empty()) {
    return absl::NotFoundError(absl::StrCat("model folder ", path, " has no *.safetensors"));
  }
  std::sort(files.begin(), files.end());
  return files;
}

absl::Status CheckModelOpens(const std::string& path) {
  absl::StatusOr<std::vector<std::string>> files = ModelFiles(path);
  if (!files.ok()) return files.status();
  for (const std::string& f : *files) {
    const absl::Status opened = absl::EndsWith(f, ".safetensors")
                                    ? SafetensorsFile::Open(f).status()
                                    : GgufFile::Open(f).status();
    if (!opened.ok()) return opened;
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ModelBytes(const std::string& path) {
  absl::StatusOr<std::vector<std::string>> files = ModelFiles(path);
  if (!files.ok()) return files.status();
  int64_t total = 0;
  for (const std::string& f : *files) {
    std::error_code error;
    const uintmax_t size = std::filesystem::file_size(f, error);
    if (error) return absl::NotFoundError(absl::StrCat(f, ": ", error.message()));
    total += static_cast<int64_t>(size);
  }
  return total;
}

absl::StatusOr<int64_t> PrefetchModelFiles(const std::string& path,
                                           const std::function<void(int64_t, int64_t)>& progress) {
  absl::StatusOr<std::vector<std::string>> files = ModelFiles(path);
  if (!files.ok()) return files.status();
  absl::StatusOr<int64_t> size = ModelBytes(path);
  if (!size.ok()) return size.status();
  const int64_t total = *size;
  // 1 MiB, left uninitialised: zeroing (and unmapping) a larger buffer cost more than the
  // reads of a small model.
  constexpr size_t kChunk = 1 << 20;
  std::unique_ptr<char[]> chunk(new char[kChunk]);
  int64_t done = 0;
  for (const std::string& f : *files) {
    const int fd = open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ReadError(f);
    ssize_t n;
    while ((n = read(fd, chunk.get(), kChunk)) > 0) {
      done += n;
      if (progress) progress(std::min(done, total), total);
    }
    const int read_errno = errno;
    close(fd);
    if (n < 0) {
      errno = read_errno;
      return ReadError(f);
    }
  }
  return total;
}

std::string WeightTypeMix(const Model& model) {
  std::map<std::string, int> count;
  auto add = [&](const WeightMatrix& m) { ++count[std::string(TensorTypeName(m.type))]; };
  add(model.token_embedding());
  if (!model.config().tied_output) add(model.output());
  int vectors = 1;  // the output norm
  for (int64_t i = 0; i < model.config().n_layers; ++i) {
    const LayerWeights& l = model.layer(i);
    for (const WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      add(*m);
    }
    vectors += model.config().qkv_bias ? 5 : 2;  // the norms, and the biases
  }
  std::vector<std::pair<std::string, int>> sorted(count.begin(), count.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (const auto& [type, n] : sorted) parts.push_back(absl::StrCat(type, " x", n));
  return absl::StrCat(absl::StrJoin(parts, " + "), " + ", vectors, " vectors");
}

std::string LoadSummary(const Model& model, int64_t bytes, double seconds) {
  return absl::StrFormat("loaded %s: %s, %s, %s in %.2f s", model.path(),
                         model.config().architecture, WeightTypeMix(model), Mib(bytes), seconds);
}

LoadReport::LoadReport(std::string path, FILE* out, bool bar)
    : path_(std::move(path)), out_(out), bar_(bar), start_(std::chrono::steady_clock::now()) {}

void LoadReport::Prefetch() {
  if (!bar_) {  // no bar to draw: the sizes suffice, and the loader reads what it needs
    absl::StatusOr<int64_t> bytes = ModelBytes(path_);
    bytes_ = bytes.ok() ? *bytes : 0;
    return;
  }
  absl::StatusOr<int64_t> bytes =
      PrefetchModelFiles(path_, [&](int64_t done, int64_t total) { Draw(done, total); });
  if (last_permille_ >= 0) std::fprintf(out_, "\r\033[K");  // the bar makes room
  bytes_ = bytes.ok() ? *bytes : 0;
}

void LoadReport::Draw(int64_t done, int64_t total) {
  const int permille = total > 0 ? static_cast<int>(1000 * done / total) : 1000;
  if (permille == last_permille_) return;
  last_permille_ = permille;
  constexpr int kWidth = 30;
  const int filled = permille * kWidth / 1000;
  std::fprintf(out_, "\rloading %s [%s%s] %3d%% %s / %s", path_.c_str(),
               std::string(filled, '#').c_str(), std::string(kWidth - filled, '.').c_str(),
               permille / 10, Mib(done).c_str(), Mib(total).c_str());
  std::fflush(out_);
}

void LoadReport::Loaded(const Model& model) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(out_, "%s\n", LoadSummary(model, bytes_, seconds).c_str());
  std::fflush(out_);
}

}  // namespace tandem
