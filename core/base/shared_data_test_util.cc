#include "core/base/shared_data_test_util.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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
    return absl::NotFoundError(
        absl::StrCat("shared test file missing: ", path.string(),
                     " (set TANDEM_SHARED to the folder that holds models/, normally ../shared)"));
  }
  return path.string();
}

absl::StatusOr<std::string> ReadSharedFile(absl::string_view relative) {
  absl::StatusOr<std::string> path = SharedFile(relative);
  if (!path.ok()) return path.status();
  std::ifstream in(*path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", *path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

namespace {

// The first of $TANDEM_SOURCE_DIR, the working directory (Bazel runfiles) and the source
// folder configured at build time that holds `relative`; "" when none does.
std::string FindInRepo(const std::string& relative) {
  std::vector<std::string> roots;
  if (const char* env = std::getenv("TANDEM_SOURCE_DIR"); env != nullptr && *env != '\0') {
    roots.push_back(env);
  }
  roots.push_back(".");
#ifdef TANDEM_SOURCE_DIR
  roots.push_back(TANDEM_SOURCE_DIR);
#endif
  for (const std::string& root : roots) {
    std::filesystem::path path = std::filesystem::path(root) / relative;
    std::error_code error;
    if (std::filesystem::exists(path, error)) return path.string();
  }
  return "";
}

std::string RepoTool(const std::string& name) {
  const std::string path = FindInRepo("tools/" + name);
  return path.empty() ? "tools/" + name : path;
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace

absl::StatusOr<std::string> ReadRepoFile(absl::string_view relative) {
  const std::string path = FindInRepo(std::string(relative));
  if (path.empty()) {
    return absl::NotFoundError(absl::StrCat("repository file ", relative,
                                            " not found (set TANDEM_SOURCE_DIR to the checkout)"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

absl::StatusOr<std::string> MakeDevCerts() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/tandem-certs-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("cannot create a folder like ", pattern));
  }
  const std::string command = "/bin/bash " + ShellQuote(RepoTool("make-dev-certs.sh")) + " " +
                              ShellQuote(pattern) + " 2>" + ShellQuote(pattern + "/tool.log");
  const int status = std::system(command.c_str());
  if (status != 0) {
    return absl::InternalError(
        absl::StrCat("make-dev-certs.sh failed (status ", status, "): ", command));
  }
  return pattern;
}

absl::StatusOr<std::string> MakeFixtureModel(const std::vector<std::string>& args) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/tandem-fixture-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("cannot create a folder like ", pattern));
  }
  std::string command = "/usr/bin/python3 " + ShellQuote(RepoTool("make_fixture_model"));
  for (const std::string& arg : args) command += " " + ShellQuote(arg);
  command += " --out-gguf " + ShellQuote(pattern + "/model.gguf");
  command += " --out-hf " + ShellQuote(pattern + "/hf");
  command += " 2>" + ShellQuote(pattern + "/tool.log");
  const int status = std::system(command.c_str());
  if (status != 0) {
    return absl::InternalError(
        absl::StrCat("fixture tool failed (status ", status, "): ", command));
  }
  return pattern;
}

}  // namespace tandem::testing
