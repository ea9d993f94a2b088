// Writes json_schema_fuzzer's seed corpus (run at test time, never committed): the fixed seeds
// and 100 random schemas.
//   make_json_schema_seeds OUT_DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/base/json.h"
#include "core/grammar/fuzz/json_schema_seeds.h"
#include "core/grammar/random_schema_test_util.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  int written = 0;
  auto write = [&](const std::string& seed) {
    std::ofstream out(dir / ("json-schema-" + std::to_string(written++)), std::ios::binary);
    out.write(seed.data(), static_cast<std::streamsize>(seed.size()));
    return static_cast<bool>(out);
  };
  for (const char* seed : tandem::fuzzing::kJsonSchemaSeeds) {
    if (!write(seed)) return 1;
  }
  for (uint32_t seed = 1; seed <= 100; ++seed) {
    if (!write(tandem::json::Serialize(tandem::testing::RandomSchema(seed)))) {
      std::fprintf(stderr, "cannot write into %s\n", dir.c_str());
      return 1;
    }
  }
  return 0;
}
