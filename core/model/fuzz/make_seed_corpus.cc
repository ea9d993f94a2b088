// Writes a fuzzer's seed corpus into a folder (run at test time, never committed):
//   make_seed_corpus gguf|safetensors OUT_DIR [FILE...]
// The built-in seeds, plus the first 16 KiB of each FILE (e.g. the shared model files).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/model/fuzz/seed_corpus.h"

namespace {

bool WriteFile(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s gguf|safetensors OUT_DIR [FILE...]\n", argv[0]);
    return 2;
  }
  const std::string format = argv[1];
  std::vector<tandem::fuzzing::Input> seeds;
  if (format == "gguf") {
    seeds = tandem::fuzzing::GgufSeeds();
  } else if (format == "safetensors") {
    seeds = tandem::fuzzing::SafetensorsSeeds();
  } else {
    std::fprintf(stderr, "unknown format '%s'\n", format.c_str());
    return 2;
  }
  constexpr size_t kPrefixBytes = 16 << 10;
  for (int i = 3; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", argv[i]);
      return 1;
    }
    std::vector<uint8_t> prefix(kPrefixBytes);
    in.read(reinterpret_cast<char*>(prefix.data()), kPrefixBytes);
    prefix.resize(static_cast<size_t>(in.gcount()));
    seeds.push_back(std::move(prefix));
  }
  const std::filesystem::path dir = argv[2];
  std::filesystem::create_directories(dir);
  for (size_t i = 0; i < seeds.size(); ++i) {
    if (!WriteFile(dir / (format + "-seed-" + std::to_string(i)), seeds[i])) {
      std::fprintf(stderr, "cannot write into %s\n", dir.c_str());
      return 1;
    }
  }
  return 0;
}
