#include "wire/startup_signals.h"

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace tandem {

ExitDuringStartup::ExitDuringStartup(std::string program)
    : program_(std::move(program)), watcher_([this] { Watch(); }) {}

void ExitDuringStartup::Done() {
  if (done_.exchange(true)) return;
  if (watcher_.joinable()) watcher_.join();
}

void ExitDuringStartup::Watch() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  // Polls so that Done() returns promptly and leaves later signals pending for the main
  // thread's sigwait.
  const timespec tick{0, 20 * 1000 * 1000};
  while (!done_.load()) {
    const int received = sigtimedwait(&signals, nullptr, &tick);
    if (received > 0) {
      std::fprintf(stderr, "%s: %s during start-up: exiting\n", program_.c_str(),
                   received == SIGTERM ? "SIGTERM" : "SIGINT");
      std::fflush(stderr);
      std::_Exit(0);  // nothing to drain: no request was accepted yet
    }
  }
}

}  // namespace tandem
