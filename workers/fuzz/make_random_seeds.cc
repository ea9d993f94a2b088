// Writes a seed corpus of random byte strings (run at test time, never committed), for fuzz
// targets whose decoders read any bytes as a structured input (fuzz_reader.h):
//   make_random_seeds OUT_DIR COUNT MAX_BYTES RNG_SEED
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s OUT_DIR COUNT MAX_BYTES RNG_SEED\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const int count = std::atoi(argv[2]);
  const int max_bytes = std::atoi(argv[3]);
  std::mt19937 rng(static_cast<uint32_t>(std::strtoul(argv[4], nullptr, 10)));
  std::filesystem::create_directories(dir);
  for (int i = 0; i < count; ++i) {
    std::string bytes(1 + rng() % static_cast<uint32_t>(max_bytes), '\0');
    for (char& b : bytes) b = static_cast<char>(rng());
    std::ofstream out(dir / ("random-seed-" + std::to_string(i)), std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::fprintf(stderr, "cannot write into %s\n", dir.c_str());
      return 1;
    }
  }
  return 0;
}
