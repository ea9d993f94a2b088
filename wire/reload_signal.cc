#include "wire/reload_signal.h"

#include <signal.h>
#include <time.h>

#include <utility>

namespace tandem {
namespace {

sigset_t ReloadSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGHUP);
  return signals;
}

}  // namespace

void BlockReloadSignal() {
  const sigset_t signals = ReloadSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

ReloadOnSignal::ReloadOnSignal(std::function<void()> reload) : reload_(std::move(reload)) {
  BlockReloadSignal();  // harmless when main did already; the watcher inherits it
  thread_ = std::thread([this] { Watch(); });
}

ReloadOnSignal::~ReloadOnSignal() {
  stop_ = true;
  thread_.join();
}

void ReloadOnSignal::Watch() {
  const sigset_t signals = ReloadSignals();
  const timespec poll = {0, 100 * 1000 * 1000};  // how soon a stop is noticed
  while (!stop_) {
    if (sigtimedwait(&signals, nullptr, &poll) == SIGHUP) reload_();
  }
}

}  // namespace tandem
