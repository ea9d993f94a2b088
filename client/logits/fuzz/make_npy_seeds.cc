// Writes the .npy fuzzer's seed corpus (run at test time, never committed):
//   make_npy_seeds OUT_DIR
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "client/logits/fuzz/npy_seeds.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::vector<std::vector<uint8_t>> seeds = tandem::fuzzing::NpySeeds();
  for (size_t i = 0; i < seeds.size(); ++i) {
    const std::string path = std::string(argv[1]) + "/seed_" + std::to_string(i) + ".npy";
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(seeds[i].data()),
              static_cast<std::streamsize>(seeds[i].size()));
    if (!out) {
      std::fprintf(stderr, "make_npy_seeds: cannot write %s\n", path.c_str());
      return 1;
    }
  }
  return 0;
}
