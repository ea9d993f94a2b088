// Runs a binary's flag parsing (an OptionsFromFlags(argc, argv) function over its ABSL_FLAGs)
// in a test, as if the binary had been started with `args`:
//
//   absl::StatusOr<WorkerProcessOptions> o =
//       testing::FromCommandLine(WorkerOptionsFromFlags, {"--role", "draft", "--model", "m"});
//
// Every flag is at its default before the call and again after it, so each call of a test
// parses afresh.
#ifndef TANDEM_CORE_BASE_COMMAND_LINE_TEST_UTIL_H_
#define TANDEM_CORE_BASE_COMMAND_LINE_TEST_UTIL_H_

#include <string>
#include <vector>

#include "absl/flags/reflection.h"

namespace tandem::testing {

template <typename FromFlags>
auto FromCommandLine(FromFlags from_flags, std::vector<std::string> args) {
  absl::FlagSaver restore_defaults_after;
  args.insert(args.begin(), "program");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  return from_flags(static_cast<int>(argv.size()), argv.data());
}

}  // namespace tandem::testing

#endif  // TANDEM_CORE_BASE_COMMAND_LINE_TEST_UTIL_H_
