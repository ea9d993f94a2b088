// Where tests find the shared models and vectors (`../shared` beside the checkout, or
// $TANDEM_SHARED). Tests read them in place; nothing is copied into the repository.
#ifndef TANDEM_CORE_BASE_TEST_DATA_H_
#define TANDEM_CORE_BASE_TEST_DATA_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem::testing {

// The shared folder: $TANDEM_SHARED if set, else the folder configured at build time.
std::string SharedDir();

// The absolute path of `relative` inside the shared folder, or kNotFound with a message that
// names the missing path and says how to point the tests at the shared files.
absl::StatusOr<std::string> SharedFile(absl::string_view relative);

}  // namespace tandem::testing

#endif  // TANDEM_CORE_BASE_TEST_DATA_H_
