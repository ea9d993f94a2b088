// A read-only view of a whole file's bytes, backed by mmap, or of a caller's buffer.
//
//   ASSIGN_OR_RETURN(MappedFile file, MappedFile::Open("/models/x.gguf"));
//   absl::Span<const uint8_t> bytes = file.bytes();
//
// The bytes never move while the object lives, even when it is moved, so views into them
// (string_views, tensor pointers) stay valid as long as some MappedFile owns the mapping.
// Thread-safe: the bytes are immutable; share a const MappedFile between threads freely.
#ifndef TANDEM_CORE_MODEL_MAPPED_FILE_H_
#define TANDEM_CORE_MODEL_MAPPED_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace tandem {

class MappedFile {
 public:
  // Maps `path` read-only. kNotFound naming the path if it does not exist, kPermissionDenied
  // if it cannot be read, kInvalidArgument if it is not a regular file, otherwise the
  // code errno maps to with errno's text. An empty file maps to zero bytes.
  static absl::StatusOr<MappedFile> Open(const std::string& path);

  // Wraps `bytes` without copying; the caller keeps them alive and unchanged for as long as
  // this object and every view into it live. `name` stands in for the path in messages.
  // For fuzzers and for tests of hostile inputs.
  static MappedFile FromBuffer(absl::Span<const uint8_t> bytes, std::string name = "<memory>");

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  absl::Span<const uint8_t> bytes() const { return {data_, size_}; }
  // The path given to Open(), or the name given to FromBuffer().
  const std::string& path() const { return path_; }

 private:
  MappedFile(const uint8_t* data, size_t size, bool owns_mapping, std::string path)
      : data_(data), size_(size), owns_mapping_(owns_mapping), path_(std::move(path)) {}
  void Unmap();

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool owns_mapping_ = false;  // true: data_ came from mmap and is unmapped on destruction
  std::string path_;
};

// Asks the kernel to take back the resident pages wholly inside [data, data + size)
// (MADV_PAGEOUT). Contents never change: pages of a file mapping leave memory and are read
// back from the file if touched again; anonymous memory may go to swap. For a range that is
// not mapped, or on a kernel without MADV_PAGEOUT, nothing happens. Returns whether the
// kernel took the advice (true for an empty page range).
bool ReleaseResidentPages(const void* data, size_t size);

}  // namespace tandem

#endif  // TANDEM_CORE_MODEL_MAPPED_FILE_H_
