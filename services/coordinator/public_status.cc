#include "services/coordinator/public_status.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_replace.h"

namespace tandem {
namespace {

// The forms a name takes in gRPC's own messages: an IPv6 address "[::1]:7001" appears
// percent-encoded in its target URIs ("ipv6:%5B::1%5D:7001"), in either case.
std::vector<std::string> Forms(const std::string& name) {
  std::vector<std::string> forms = {name};
  if (name.find_first_of("[]") != std::string::npos) {
    forms.push_back(absl::StrReplaceAll(name, {{"[", "%5B"}, {"]", "%5D"}}));
    forms.push_back(absl::StrReplaceAll(name, {{"[", "%5b"}, {"]", "%5d"}}));
  }
  return forms;
}

}  // namespace

absl::Status PublicStatus(const absl::Status& status, const Redactions& redactions) {
  if (status.ok()) return status;
  Redactions ordered;
  for (const auto& [name, label] : redactions) {
    if (name.empty()) continue;
    for (std::string& form : Forms(name)) ordered.emplace_back(std::move(form), label);
  }
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  std::string message(status.message());
  // One pass per name, longest first: a replaced label is never matched again unless a
  // label itself contains a later name (labels are short words, names are addresses/paths).
  for (const auto& [name, label] : ordered) {
    message = absl::StrReplaceAll(message, {{name, label}});
  }
  // Payloads say which request field an error is about (openai_fields.h): the client's own.
  absl::Status out(status.code(), message);
  status.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

}  // namespace tandem
