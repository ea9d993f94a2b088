// Start-up (waiting for workers, loading a model) takes seconds to minutes, and the binaries
// block SIGTERM/SIGINT for WaitForTerminationSignal (grpc_server.h): without this, a stop
// request during start-up would wait for it to finish. While an ExitDuringStartup lives, such
// a signal ends the process at once with one line and exit status 0 (nothing is in flight
// yet, so there is nothing to drain).
//
//   tandem::ExitDuringStartup startup("tandem-coordinator");
//   ... Coordinator::Create(...) ...
//   startup.Done();             // from here on, WaitForTerminationSignal gets the signals
//
// Thread-safe; one per process, on the main thread.
#ifndef TANDEM_WIRE_STARTUP_SIGNALS_H_
#define TANDEM_WIRE_STARTUP_SIGNALS_H_

#include <atomic>
#include <string>
#include <thread>

namespace tandem {

class ExitDuringStartup {
 public:
  // Call after BlockTerminationSignals().
  explicit ExitDuringStartup(std::string program);
  ~ExitDuringStartup() { Done(); }
  ExitDuringStartup(const ExitDuringStartup&) = delete;
  ExitDuringStartup& operator=(const ExitDuringStartup&) = delete;

  // Stops watching (within 20 ms); a signal that arrives later stays pending for
  // WaitForTerminationSignal. Idempotent.
  void Done();

 private:
  void Watch();

  std::string program_;
  std::atomic<bool> done_{false};
  std::thread watcher_;
};

}  // namespace tandem

#endif  // TANDEM_WIRE_STARTUP_SIGNALS_H_
