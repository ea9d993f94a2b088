// tandem-worker's command line: every flag, parsed and checked into one plain struct, so that
// the parsing is tested without starting a process (worker_options_test.cc) and main.cc only
// runs what the struct says.
//
// The flags (ABSL_FLAGs) are defined in worker_options.cc, which only tandem-worker and its
// test link; no library reads them.
#ifndef TANDEM_WORKERS_WORKER_OPTIONS_H_
#define TANDEM_WORKERS_WORKER_OPTIONS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "wire/grpc_server.h"
#include "wire/tls_credentials.h"
#include "workers/worker_engine.h"

namespace tandem {

// What one tandem-worker process runs with; every field comes from a flag.
struct WorkerProcessOptions {
  // --role, --model, --threads, --kv, --ctx, --max-sessions, --kv-budget-mb,
  // --max-batch-tokens, --pooling, --activations. The metrics hooks are left unset (the
  // process sets them).
  WorkerOptions engine;
  // --listen, --metrics-listen, --health-listen; the credentials come from `tls`.
  GrpcServerOptions server;
  TlsFiles tls;                 // --tls-cert, --tls-key, --tls-ca: paths, read at start-up
  std::string tls_client_name;  // --tls-client-name
  absl::Duration session_idle;  // --session-idle-seconds (zero: never)
  absl::Duration open_timeout;  // --open-timeout-seconds (zero: never)
  absl::Duration drain;         // --drain-seconds
  int verbosity = 0;            // -v
};

// Parses argv (argv[0] is the program). --help and --version print and exit(0).
// kInvalidArgument for a bad command line, its message naming the flag as tandem-worker prints
// it (after "tandem-worker: ", exit status 2).
absl::StatusOr<WorkerProcessOptions> WorkerOptionsFromFlags(int argc, char** argv);

}  // namespace tandem

#endif  // TANDEM_WORKERS_WORKER_OPTIONS_H_
