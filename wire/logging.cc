#include "wire/logging.h"

#include <atomic>

#include "glog/logging.h"

namespace tandem {

void InitLogging(const char* argv0, int verbosity) {
  static std::atomic<bool> initialized{false};
  FLAGS_logtostderr = true;  // containers and systemd collect stderr; no files in /tmp
  FLAGS_v = verbosity;
  if (!initialized.exchange(true)) google::InitGoogleLogging(argv0);
}

}  // namespace tandem
