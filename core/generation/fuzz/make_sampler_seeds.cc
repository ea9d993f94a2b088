// Writes the sampler fuzzer's seed corpus (run at test time, never committed):
//   make_sampler_seeds OUT_DIR
// Every float edge value in each float setting with the others ordinary, the integer edges
// of top_k and penalty_window, each logit pattern, and the settings issue #10 reported
// (repetition_penalty 1e-38, top_p 1 with min_p 0.05, temperature 1e30).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/generation/fuzz/sampler_fuzz_input.h"

namespace {

using tandem::fuzzing::LogitPattern;
using tandem::fuzzing::SamplerCaseEncoder;

// Indices into the float edge table (sampler_fuzz_input.cc).
constexpr uint8_t kZero = 0, kOne = 1, kPointEight = 2, kTiny = 4, kHuge = 8, kMinP = 17,
                  kTopP = 18;

std::vector<uint8_t> Case(uint8_t temperature, uint8_t top_k, uint8_t top_p, uint8_t min_p,
                          uint8_t penalty, uint8_t window, LogitPattern pattern, uint64_t seed) {
  std::vector<uint8_t> logits;
  for (int i = 0; i < 512 * 4; ++i) logits.push_back(static_cast<uint8_t>(i * 37 + seed));
  return SamplerCaseEncoder()
      .Vocab(seed % 2 ? 512 : 1 + seed % 40)
      .FloatEdge(temperature)
      .IntEdge(top_k)
      .FloatEdge(top_p)
      .FloatEdge(min_p)
      .FloatEdge(penalty)
      .IntEdge(window)
      .Seed(seed)
      .Context({1, 2, 3, 5, 8, 13, 21, 34})
      .Logits(pattern, logits)
      .Build();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  std::vector<std::vector<uint8_t>> seeds;
  uint64_t n = 0;
  for (uint8_t edge = 0; edge < tandem::fuzzing::FloatEdgeCount(); ++edge) {
    const auto pattern = static_cast<LogitPattern>(edge % 4);
    seeds.push_back(Case(edge, 0, kOne, kZero, kOne, 8, pattern, ++n));
    seeds.push_back(Case(kPointEight, 0, edge, kZero, kOne, 8, pattern, ++n));
    seeds.push_back(Case(kPointEight, 0, kOne, edge, kOne, 8, pattern, ++n));
    seeds.push_back(Case(kPointEight, 0, kTopP, kZero, edge, 8, pattern, ++n));
  }
  for (uint8_t edge = 0; edge < tandem::fuzzing::IntEdgeCount(); ++edge) {
    seeds.push_back(Case(kPointEight, edge, kTopP, kMinP, kOne, 0, LogitPattern::kSmallInts, ++n));
    seeds.push_back(Case(kPointEight, 0, kOne, kZero, kTiny, edge, LogitPattern::kRaw, ++n));
  }
  seeds.push_back(Case(kPointEight, 0, kOne, kZero, kTiny, 8, LogitPattern::kRaw, ++n));
  seeds.push_back(Case(kPointEight, 0, kOne, kMinP, kOne, 8, LogitPattern::kRaw, ++n));
  seeds.push_back(Case(kHuge, 0, kOne, kZero, kOne, 8, LogitPattern::kExtremes, ++n));
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  for (size_t i = 0; i < seeds.size(); ++i) {
    std::ofstream out(dir / ("sampler-seed-" + std::to_string(i)), std::ios::binary);
    out.write(reinterpret_cast<const char*>(seeds[i].data()),
              static_cast<std::streamsize>(seeds[i].size()));
    if (!out) {
      std::fprintf(stderr, "cannot write into %s\n", dir.c_str());
      return 1;
    }
  }
  return 0;
}
