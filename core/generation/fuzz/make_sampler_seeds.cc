// Writes the sampler fuzzer's seed corpus (run at test time, never committed):
//   make_sampler_seeds OUT_DIR
// Every float edge value in each float setting with the others ordinary, the integer edges
// of top_k and penalty_window, each logit pattern, and the settings issue #10 reported
// (repetition_penalty 1e-38, top_p 1 with min_p 0.05, temperature 1e30).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
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

// Issue #30's steps over 40 tokens of small-integer logits: a context of 8 whose last
// `8 - output_start` count as generated, presence and frequency penalties, logit_bias entries
// (bias table: -100, 100, 0, 1, -1, 99.999, -100.001, 50).
std::vector<uint8_t> OpenAiCase(uint8_t temperature, uint8_t presence, uint8_t frequency,
                                uint8_t output_start,
                                const std::vector<std::pair<uint8_t, uint8_t>>& bias) {
  std::vector<uint8_t> logits;
  for (int i = 0; i < 40; ++i) logits.push_back(static_cast<uint8_t>(i * 7));
  return SamplerCaseEncoder()
      .Vocab(40)
      .FloatEdge(temperature)
      .IntEdge(0)
      .FloatEdge(kTopP)
      .FloatEdge(kMinP)
      .FloatEdge(kOne)
      .IntEdge(8)
      .Seed(output_start)
      .Context({1, 2, 3, 5, 8, 13, 21, 34})
      .Logits(LogitPattern::kSmallInts, logits)
      .OpenAiSteps(presence, frequency, output_start, bias)
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
  constexpr uint8_t kTwo = 7, kMinusOne = 10, kNan = 14;
  seeds.push_back(OpenAiCase(kZero, kTwo, kTwo, 0, {}));
  seeds.push_back(OpenAiCase(kPointEight, kMinusOne, kTwo, 4, {{3, 0}, {5, 1}, {39, 3}}));
  seeds.push_back(OpenAiCase(kZero, kZero, kZero, 0, {{1, 0}, {2, 0}, {41, 1}}));
  seeds.push_back(OpenAiCase(kOne, kNan, kZero, 2, {{7, 6}, {6, 5}}));  // refused: NaN, order
  seeds.push_back(OpenAiCase(kHuge, kTwo, kMinusOne, 8, {{0, 0}, {8, 7}, {9, 2}}));
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
