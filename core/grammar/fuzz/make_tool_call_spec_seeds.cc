// Writes tool_call_spec_fuzzer's seed corpus (run at test time, never committed):
//   make_tool_call_spec_seeds OUT_DIR
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/grammar/fuzz/tool_call_spec_seeds.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  int written = 0;
  for (const char* seed : tandem::fuzzing::kToolCallSpecSeeds) {
    std::ofstream out(dir / ("tool-call-spec-" + std::to_string(written++)), std::ios::binary);
    out.write(seed, static_cast<std::streamsize>(std::strlen(seed)));
    if (!out) {
      std::fprintf(stderr, "cannot write into %s\n", dir.c_str());
      return 1;
    }
  }
  return 0;
}
