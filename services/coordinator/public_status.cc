#include "services/coordinator/public_status.h"

#include <algorithm>

#include "absl/strings/str_replace.h"

namespace tandem {

absl::Status PublicStatus(const absl::Status& status, const Redactions& redactions) {
  if (status.ok()) return status;
  Redactions ordered;
  for (const auto& r : redactions) {
    if (!r.first.empty()) ordered.push_back(r);
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  std::string message(status.message());
  // One pass per name, longest first: a replaced label is never matched again unless a
  // label itself contains a later name (labels are short words, names are addresses/paths).
  for (const auto& [name, label] : ordered) {
    message = absl::StrReplaceAll(message, {{name, label}});
  }
  return absl::Status(status.code(), message);
}

}  // namespace tandem
