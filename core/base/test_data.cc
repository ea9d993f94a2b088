#include "core/base/test_data.h"

#include <cstdlib>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tandem::testing {

std::string SharedDir() {
  if (const char* env = std::getenv("TANDEM_SHARED"); env != nullptr && *env != '\0') {
    return env;
  }
#ifdef TANDEM_SHARED_DIR
  return TANDEM_SHARED_DIR;
#else
  return "../shared";
#endif
}

absl::StatusOr<std::string> SharedFile(absl::string_view relative) {
  std::filesystem::path path = std::filesystem::path(SharedDir()) / std::string(relative);
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    return absl::NotFoundError(absl::StrCat(
        "shared test file missing: ", path.string(),
        " (set TANDEM_SHARED to the folder that holds models/, normally ../shared)"));
  }
  return path.string();
}

}  // namespace tandem::testing
