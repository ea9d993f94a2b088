// Operator logs for the servers (glog, to stderr). Call InitLogging once in main(), after the
// flags are parsed; libraries then log with glog's LOG(INFO|WARNING|ERROR) and VLOG(n).
//
// What the servers log, and at which level:
//   INFO     one line per request outcome (coordinator), start-up and drain;
//   WARNING  each draft drop, each target failover, each error a worker answers;
//   VLOG(1)  each session attach and close; VLOG(2) each worker call.
//
// This header does not include glog (whose gflags `FLAGS_v` would clash with a binary's own
// `--v` ABSL_FLAG), so main.cc files include it freely.
#ifndef TANDEM_WIRE_LOGGING_H_
#define TANDEM_WIRE_LOGGING_H_

namespace tandem {

// Sends every severity to stderr (no log files) and sets the VLOG level. Idempotent: a second
// call only changes the verbosity.
void InitLogging(const char* argv0, int verbosity);

}  // namespace tandem

#endif  // TANDEM_WIRE_LOGGING_H_
