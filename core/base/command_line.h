// Command-line parsing for Tandem's binaries over their ABSL_FLAGs, with the behaviour a user
// expects and the exit codes the binaries promise:
//  - dashed names (--top-k, --max-tokens) for the flags' underscored names;
//  - `--name=value` or `--name value`; `--flag`/`--noflag` for booleans;
//  - --help (usage and every flag of the binary) and --version, exit status 0;
//  - an unknown flag or a bad value is a kInvalidArgument naming the flag (the binary prints
//    it on one line and exits 2), never abseil's exit(1).
// Only flags defined in files whose path contains `flag_file_filter` are listed by --help.
#ifndef TANDEM_CORE_BASE_COMMAND_LINE_H_
#define TANDEM_CORE_BASE_COMMAND_LINE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem {

struct CommandLineSpec {
  std::string program;           // "tandem-chat"
  std::string version;           // "0.1.0"
  std::string usage;             // one or more lines shown by --help
  std::string flag_file_filter;  // e.g. "main.cc": which flags --help lists
};

// Sets the flags and returns the positional arguments (argv[0] excluded). --help and
// --version print to stdout and exit(0). `given`, when not null, receives the (underscored)
// names of the flags the command line set, in order, so a binary can refuse flags that mean
// nothing in a mode even when their value equals the default.
absl::StatusOr<std::vector<std::string>> ParseCommandLine(
    int argc, char** argv, const CommandLineSpec& spec, std::vector<std::string>* given = nullptr);

}  // namespace tandem

#endif  // TANDEM_CORE_BASE_COMMAND_LINE_H_
