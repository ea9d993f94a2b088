#include "services/coordinator/served_model_names.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tandem {

absl::StatusOr<std::vector<std::string>> ParseServedModelNames(absl::string_view flag) {
  std::vector<std::string> names;
  if (flag.empty()) return names;
  for (absl::string_view name : absl::StrSplit(flag, ',')) {
    const bool printable = std::all_of(name.begin(), name.end(), [](char c) {
      return c > ' ' && c < 0x7f;  // no spaces, no controls, ASCII
    });
    if (name.empty() || name.size() > kMaxServedModelNameBytes || !printable) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--served-model-name: '", name.substr(0, 64),
          "' is not a name (1-256 bytes of printable ASCII, no spaces; commas separate names)"));
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--served-model-name: '", name, "' is named twice"));
    }
    names.emplace_back(name);
  }
  if (names.size() > kMaxServedModelNames) {
    return absl::InvalidArgumentError(absl::StrCat("--served-model-name: over ",
                                                   kMaxServedModelNames, " names"));
  }
  return names;
}

}  // namespace tandem
