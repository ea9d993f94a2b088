// Reads a small text file whole (a certificate, a key, a list of API keys), bounded so that a
// path given by mistake (a model, a device) is refused instead of read.
#ifndef TANDEM_WIRE_SMALL_FILE_H_
#define TANDEM_WIRE_SMALL_FILE_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem {

// The file's bytes. kNotFound when it cannot be opened, kDataLoss when reading fails,
// kInvalidArgument when it is larger than `max_bytes`; each message names `what` and the path.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path, absl::string_view what,
                                          size_t max_bytes = 1 << 20);

}  // namespace tandem

#endif  // TANDEM_WIRE_SMALL_FILE_H_
