#include "wire/small_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"

namespace tandem {

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, absl::string_view what,
                                          size_t max_bytes) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (file == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("cannot open ", what, " '", path, "': ", std::strerror(errno)));
  }
  std::string bytes;
  char buffer[16384];
  while (true) {
    const size_t n = std::fread(buffer, 1, sizeof(buffer), file.get());
    bytes.append(buffer, n);
    if (bytes.size() > max_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " '", path, "' is larger than ", max_bytes, " bytes"));
    }
    if (n < sizeof(buffer)) break;
  }
  if (std::ferror(file.get())) {
    return absl::DataLossError(absl::StrCat("cannot read ", what, " '", path, "'"));
  }
  return bytes;
}

}  // namespace tandem
