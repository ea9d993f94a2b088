// tandem-coordinator's command line: every flag, parsed and checked into one plain struct, so
// that the parsing is tested without starting a process (coordinator_options_test.cc) and
// main.cc only runs what the struct says.
//
// The flags (ABSL_FLAGs) are defined in coordinator_options.cc, which only tandem-coordinator
// and its test link; no library reads them.
#ifndef TANDEM_SERVICES_COORDINATOR_COORDINATOR_OPTIONS_H_
#define TANDEM_SERVICES_COORDINATOR_COORDINATOR_OPTIONS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "services/coordinator/coordinator.h"
#include "services/coordinator/http_server.h"
#include "wire/grpc_server.h"

namespace tandem {

// What one tandem-coordinator process runs with; every field comes from a flag.
struct CoordinatorProcessOptions {
  // The workers, speculation, sessions, queue, limits, deadlines, failover and health probes.
  // worker_client.credentials is left unset (the process reads the TLS files).
  CoordinatorOptions coordinator;
  // --listen, --metrics-listen, --health-listen, --drain-notice-seconds, --max-message-bytes;
  // the credentials come from tls_cert and tls_key.
  GrpcServerOptions server;
  // --http-listen (empty: no HTTP), --http-threads and the front's limits (--http-max-*,
  // --http-*-timeout-seconds); main adds the TLS files, the keys and the request limits.
  HttpServerOptions http;
  // TLS: files read at start-up.
  std::string tls_cert;         // --tls-cert: serve gRPC and HTTP over TLS
  std::string tls_key;          // --tls-key
  std::string tls_ca;           // --tls-ca: worker channels over TLS, verified against it
  std::string worker_tls_cert;  // --worker-tls-cert: shown to workers that want mutual TLS
  std::string worker_tls_key;   // --worker-tls-key
  std::string api_keys_file;    // --api-keys-file; empty: no authentication
  absl::Duration drain;         // --drain-seconds
  int verbosity = 0;            // -v
};

// Parses argv (argv[0] is the program). --help and --version print and exit(0).
// kInvalidArgument for a bad command line, its message naming the flag as tandem-coordinator
// prints it (after "tandem-coordinator: ", exit status 2).
absl::StatusOr<CoordinatorProcessOptions> CoordinatorOptionsFromFlags(int argc, char** argv);

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_COORDINATOR_OPTIONS_H_
