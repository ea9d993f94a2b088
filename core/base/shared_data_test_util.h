// Where tests find the shared models and vectors (`../shared` beside the checkout, or
// $TANDEM_SHARED). Tests read them in place; nothing is copied into the repository.
#ifndef TANDEM_CORE_BASE_SHARED_DATA_TEST_UTIL_H_
#define TANDEM_CORE_BASE_SHARED_DATA_TEST_UTIL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem::testing {

// The shared folder: $TANDEM_SHARED if set, else the folder configured at build time.
std::string SharedDir();

// The absolute path of `relative` inside the shared folder, or kNotFound with a message that
// names the missing path and says how to point the tests at the shared files.
absl::StatusOr<std::string> SharedFile(absl::string_view relative);

// The bytes of `relative` inside the shared folder (SharedFile's kNotFound when missing).
absl::StatusOr<std::string> ReadSharedFile(absl::string_view relative);

// Runs tools/make_fixture_model with `args` (e.g. {"--arch", "qwen2", "--dim", "64"}) plus
// --out-gguf DIR/model.gguf --out-hf DIR/hf into a fresh temporary folder DIR, and returns
// DIR. The tool is found through $TANDEM_SOURCE_DIR, the working directory (Bazel runfiles)
// or the source folder configured at build time. kInternal with the tool's exit status.
absl::StatusOr<std::string> MakeFixtureModel(const std::vector<std::string>& args);

// The bytes of `relative` inside the repository's checkout (e.g. a .proto file whose comments a
// test holds the code to), found like make_fixture_model below; kNotFound naming it.
absl::StatusOr<std::string> ReadRepoFile(absl::string_view relative);

// Runs tools/make-dev-certs.sh (found like make_fixture_model) into a fresh temporary folder
// and returns it: ca.crt, server.crt/.key (localhost, 127.0.0.1), client.crt/.key.
absl::StatusOr<std::string> MakeDevCerts();

}  // namespace tandem::testing

#endif  // TANDEM_CORE_BASE_SHARED_DATA_TEST_UTIL_H_
