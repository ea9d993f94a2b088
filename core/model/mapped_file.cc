#include "core/model/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tandem {
namespace {

// Closes a file descriptor when it goes out of scope (the mapping outlives it).
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  ~FdCloser() { close(fd_); }

 private:
  int fd_;
};

absl::Status ErrnoError(int error, absl::string_view what, const std::string& path) {
  return absl::ErrnoToStatus(error, absl::StrCat(what, " ", path));
}

}  // namespace

absl::StatusOr<MappedFile> MappedFile::Open(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT) {
      return absl::NotFoundError(absl::StrCat("no such file: ", path));
    }
    return ErrnoError(error, "cannot open", path);
  }
  FdCloser closer(fd);
  struct stat info;
  if (fstat(fd, &info) != 0) return ErrnoError(errno, "cannot stat", path);
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat("not a regular file: ", path));
  }
  const size_t size = static_cast<size_t>(info.st_size);
  if (size == 0) {
    // mmap refuses a zero length; an empty file simply has no bytes.
    return MappedFile(nullptr, 0, /*owns_mapping=*/false, path);
  }
  void* addr = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) return ErrnoError(errno, "cannot mmap", path);
  return MappedFile(static_cast<const uint8_t*>(addr), size, /*owns_mapping=*/true, path);
}

MappedFile MappedFile::FromBuffer(absl::Span<const uint8_t> bytes, std::string name) {
  return MappedFile(bytes.data(), bytes.size(), /*owns_mapping=*/false, std::move(name));
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      owns_mapping_(std::exchange(other.owns_mapping_, false)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    owns_mapping_ = std::exchange(other.owns_mapping_, false);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() { Unmap(); }

void MappedFile::Unmap() {
  if (owns_mapping_) {
    munmap(const_cast<uint8_t*>(data_), size_);
  }
  data_ = nullptr;
  size_ = 0;
  owns_mapping_ = false;
}

bool ReleaseResidentPages(const void* data, size_t size) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + size) / page * page;
  if (end <= begin) return true;
  return madvise(reinterpret_cast<void*>(begin), end - begin, MADV_PAGEOUT) == 0;
}

}  // namespace tandem
