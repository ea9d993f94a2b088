// The coordinator's client authentication: the API keys of --api-keys-file (one key per line;
// blank lines and lines starting with '#' are skipped, surrounding spaces and a CR trimmed),
// checked against the `authorization: Bearer KEY` a client sends, gRPC metadata and HTTP
// header alike. Reload() rereads the file (on SIGHUP); a file that cannot be read or parsed
// then leaves the keys in force as they were.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<ApiKeys> keys, ApiKeys::Load(path));
//   RETURN_IF_ERROR(keys->Check(authorization_header));   // kUnauthenticated
//
// Plain C++ (no gRPC, no HTTP). Thread-safe: Check runs on any thread alongside Reload.
#ifndef TANDEM_SERVICES_COORDINATOR_API_KEYS_H_
#define TANDEM_SERVICES_COORDINATOR_API_KEYS_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem {

// The keys of a keys file's text. kInvalidArgument naming `path` and the line for a key with
// spaces or control characters inside, or when the text holds no key at all.
absl::StatusOr<std::vector<std::string>> ParseApiKeys(absl::string_view text,
                                                      absl::string_view path);

class ApiKeys {
 public:
  // Reads and parses the file (ReadSmallFile's codes, or ParseApiKeys').
  static absl::StatusOr<std::unique_ptr<ApiKeys>> Load(const std::string& path);

  // Rereads the file; on an error the keys stay as they were and the error is returned.
  absl::Status Reload();

  // OK when `authorization` is "Bearer KEY" with a KEY of the file ("Bearer" in any case).
  // kUnauthenticated otherwise, saying what was wrong but never echoing the key.
  absl::Status Check(absl::string_view authorization) const;

  size_t size() const;
  const std::string& path() const { return path_; }

 private:
  explicit ApiKeys(std::string path) : path_(std::move(path)) {}

  const std::string path_;
  mutable std::mutex mutex_;
  std::shared_ptr<const std::vector<std::string>> keys_;  // guarded by mutex_
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_API_KEYS_H_
