#include "services/coordinator/api_keys.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/base/status_macros.h"
#include "wire/small_file.h"

namespace tandem {
namespace {

constexpr size_t kMaxFileBytes = 1 << 20;

// Whether `key` equals `candidate`, reading every byte of both whatever they hold, so that
// the time taken does not tell how much of a guessed key was right.
bool SameKey(absl::string_view key, absl::string_view candidate) {
  unsigned char differ = key.size() == candidate.size() ? 0 : 1;
  for (size_t i = 0; i < key.size(); ++i) {
    differ |= static_cast<unsigned char>(key[i]) ^
              static_cast<unsigned char>(candidate.empty() ? 0 : candidate[i % candidate.size()]);
  }
  return differ == 0;
}

bool Printable(absl::string_view key) {
  for (const char c : key) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ParseApiKeys(absl::string_view text,
                                                      absl::string_view path) {
  std::vector<std::string> keys;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    if (!Printable(line)) {
      return absl::InvalidArgumentError(
          absl::StrCat("API keys file '", path, "' line ", line_number,
                       ": a key has spaces or control characters inside (one key per line)"));
    }
    keys.emplace_back(line);
  }
  if (keys.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("API keys file '", path, "' holds no key (one key per line)"));
  }
  return keys;
}

absl::StatusOr<std::unique_ptr<ApiKeys>> ApiKeys::Load(const std::string& path) {
  std::unique_ptr<ApiKeys> keys(new ApiKeys(path));
  RETURN_IF_ERROR(keys->Reload());
  return keys;
}

absl::Status ApiKeys::Reload() {
  ASSIGN_OR_RETURN(const std::string text, ReadSmallFile(path_, "API keys file", kMaxFileBytes));
  ASSIGN_OR_RETURN(std::vector<std::string> parsed, ParseApiKeys(text, path_));
  auto keys = std::make_shared<const std::vector<std::string>>(std::move(parsed));
  std::lock_guard<std::mutex> lock(mutex_);
  keys_ = std::move(keys);
  return absl::OkStatus();
}

size_t ApiKeys::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return keys_ == nullptr ? 0 : keys_->size();
}

absl::Status ApiKeys::Check(absl::string_view authorization) const {
  if (authorization.empty()) {
    return absl::UnauthenticatedError("no API key: send the header 'authorization: Bearer KEY'");
  }
  constexpr absl::string_view kBearer = "bearer ";
  if (authorization.size() <= kBearer.size() ||
      !absl::StartsWithIgnoreCase(authorization, kBearer)) {
    return absl::UnauthenticatedError("the authorization header is not 'Bearer KEY'");
  }
  const absl::string_view given = absl::StripAsciiWhitespace(authorization.substr(kBearer.size()));
  std::shared_ptr<const std::vector<std::string>> keys;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    keys = keys_;
  }
  bool known = false;
  for (const std::string& key : *keys) known |= SameKey(key, given);
  if (!known) return absl::UnauthenticatedError("the API key is not valid");
  return absl::OkStatus();
}

}  // namespace tandem
