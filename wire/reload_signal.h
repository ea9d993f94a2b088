// SIGHUP as "reload your files" (the coordinator's --api-keys-file):
//
//   tandem::BlockReloadSignal();                  // first thing in main(), with
//                                                 // BlockTerminationSignals
//   tandem::ReloadOnSignal reload([&] { ... });   // runs the callback on each SIGHUP
//
// The signal is blocked in every thread and taken by sigtimedwait on the watcher's own thread,
// so the callback runs on that thread, never in a signal handler.
//
// Thread-safe; the callback runs on the watcher's thread, one call at a time.
#ifndef TANDEM_WIRE_RELOAD_SIGNAL_H_
#define TANDEM_WIRE_RELOAD_SIGNAL_H_

#include <atomic>
#include <functional>
#include <thread>

namespace tandem {

// Blocks SIGHUP in the calling thread and the threads it starts later. Call before any
// thread starts, or a thread that was not told could receive it (and end the process).
void BlockReloadSignal();

class ReloadOnSignal {
 public:
  explicit ReloadOnSignal(std::function<void()> reload);
  ~ReloadOnSignal();  // stops watching (within ~100 ms)
  ReloadOnSignal(const ReloadOnSignal&) = delete;
  ReloadOnSignal& operator=(const ReloadOnSignal&) = delete;

 private:
  void Watch();

  std::function<void()> reload_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tandem

#endif  // TANDEM_WIRE_RELOAD_SIGNAL_H_
