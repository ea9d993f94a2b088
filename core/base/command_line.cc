#include "core/base/command_line.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace tandem {
namespace {

void PrintHelp(const CommandLineSpec& spec) {
  std::printf("%s %s\n%s\n\nflags:\n", spec.program.c_str(), spec.version.c_str(),
              spec.usage.c_str());
  std::vector<absl::CommandLineFlag*> flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (absl::StrContains(flag->Filename(), spec.flag_file_filter)) flags.push_back(flag);
  }
  std::sort(flags.begin(), flags.end(), [](auto* a, auto* b) { return a->Name() < b->Name(); });
  for (absl::CommandLineFlag* flag : flags) {
    const std::string dashed = absl::StrReplaceAll(flag->Name(), {{"_", "-"}});
    std::printf("  --%s  %s (default: %s)\n", dashed.c_str(), flag->Help().c_str(),
                flag->DefaultValue().empty() ? "\"\"" : flag->DefaultValue().c_str());
  }
  std::printf("  --help  this text\n  --version  the version\n");
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ParseCommandLine(int argc, char** argv,
                                                          const CommandLineSpec& spec,
                                                          std::vector<std::string>* given) {
  std::vector<std::string> positional;
  bool only_positional = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (only_positional || arg.size() < 2 || arg[0] != '-' || arg == "-") {
      positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      only_positional = true;
      continue;
    }
    const size_t dashes = arg[1] == '-' ? 2 : 1;
    const size_t equals = arg.find('=');
    std::string name = absl::StrReplaceAll(
        arg.substr(dashes, equals == std::string::npos ? std::string::npos : equals - dashes),
        {{"-", "_"}});
    if (name == "help" || name == "h") {
      PrintHelp(spec);
      std::exit(0);
    }
    if (name == "version") {
      std::printf("%s %s\n", spec.program.c_str(), spec.version.c_str());
      std::exit(0);
    }
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    std::string value;
    if (flag == nullptr && absl::StartsWith(name, "no") && equals == std::string::npos) {
      flag = absl::FindCommandLineFlag(name.substr(2));
      if (flag != nullptr && flag->IsOfType<bool>()) {
        value = "false";
      } else {
        flag = nullptr;
      }
    }
    if (flag == nullptr || (!spec.flag_file_filter.empty() &&
                            !absl::StrContains(flag->Filename(), spec.flag_file_filter))) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag ", arg.substr(0, equals), " (see --help)"));
    }
    if (value.empty()) {
      if (equals != std::string::npos) {
        value = arg.substr(equals + 1);
      } else if (flag->IsOfType<bool>()) {
        value = "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("flag ", arg, " needs a value"));
      }
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag ", arg.substr(0, equals), ": bad value '", value, "' (", error, ")"));
    }
    if (given != nullptr) given->emplace_back(flag->Name());
  }
  return positional;
}

}  // namespace tandem
