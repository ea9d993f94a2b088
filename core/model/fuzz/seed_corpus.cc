#include "core/model/fuzz/seed_corpus.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

#include "core/model/gguf_builder_test_util.h"
#include "core/model/safetensors_builder_test_util.h"

namespace tandem::fuzzing {
namespace {

using ::tandem::testing::F32Bytes;
using ::tandem::testing::GgufBuilder;
using ::tandem::testing::SafetensorsBytes;

std::string Repeat(char byte, size_t n) { return std::string(n, byte); }

template <typename T>
void Overwrite(Input& input, size_t offset, T value) {
  if (input.size() < sizeof(T)) return;
  offset = std::min(offset, input.size() - sizeof(T));
  std::memcpy(input.data() + offset, &value, sizeof(T));
}

// One random corruption of `input`.
void Corrupt(Input& input, std::mt19937& rng) {
  auto offset = [&] {
    return input.empty() ? size_t{0}
                         : std::uniform_int_distribution<size_t>(0, input.size() - 1)(rng);
  };
  constexpr uint64_t kU64Extremes[] = {
      0, 1, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF, 1ull << 32, 100 << 20};
  constexpr uint32_t kU32Extremes[] = {0, 1, 4, 5, 9, 13, 30, 99, 0xFFFFFFFF, 0x80000000};
  switch (std::uniform_int_distribution<int>(0, 4)(rng)) {
    case 0:
      if (!input.empty()) input[offset()] = static_cast<uint8_t>(rng());
      break;
    case 1:
      Overwrite(input, offset(), kU64Extremes[rng() % std::size(kU64Extremes)]);
      break;
    case 2:
      Overwrite(input, offset(), kU32Extremes[rng() % std::size(kU32Extremes)]);
      break;
    case 3: {
      const size_t at = offset();
      input.insert(input.begin() + std::min(at, input.size()), 1 + rng() % 16,
                   static_cast<uint8_t>(rng()));
      break;
    }
    default: {
      const size_t at = offset();
      const size_t n = std::min<size_t>(1 + rng() % 16, input.size() - std::min(at, input.size()));
      input.erase(input.begin() + at, input.begin() + at + n);
      break;
    }
  }
}

}  // namespace

std::vector<Input> GgufSeeds() {
  return {
      GgufBuilder()
          .AddString("general.architecture", "llama")
          .AddUint32("llama.embedding_length", 32)
          .AddFloat32("llama.attention.layer_norm_rms_epsilon", 1e-5f)
          .AddStringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"})
          .AddFloat32Array("tokenizer.ggml.scores", {0, 0, 0, -1})
          .AddInt32Array("tokenizer.ggml.token_type", {2, 3, 3, 1})
          .AddTensor("f32", TensorType::kF32, {4, 2}, F32Bytes({1, 2, 3, 4, 5, 6, 7, 8}))
          .AddTensor("f16", TensorType::kF16, {2}, std::string("\x00\x3C\x00\xC0", 4))
          .AddTensor("bf16", TensorType::kBF16, {2}, std::string("\x80\x3F\x40\xC0", 4))
          .AddTensor("q8", TensorType::kQ8_0, {32, 2}, Repeat('\x11', 68))
          .AddTensor("q4", TensorType::kQ4_0, {64}, Repeat('\x22', 36))
          .Build(),
      GgufBuilder()
          .SetVersion(2)
          .SetAlignment(64)
          .AddUint8("u8", 1)
          .AddInt8("i8", -1)
          .AddUint16("u16", 2)
          .AddInt16("i16", -2)
          .AddInt32("i32", -3)
          .AddUint64("u64", 4)
          .AddInt64("i64", -5)
          .AddFloat64("f64", 0.5)
          .AddBool("b", true)
          .AddString("s", "x")
          .AddTensor("k", TensorType::kQ4_K, {256}, Repeat('\0', 144))
          .AddTensor("s", TensorType::kF32, {1, 1, 1, 1}, F32Bytes({3}))
          .Build(),
      GgufBuilder().AddString("general.name", "empty").Build(),
  };
}

std::vector<Input> SafetensorsSeeds() {
  return {
      SafetensorsBytes(R"({"__metadata__":{"format":"pt"},)"
                       R"("a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
                       R"("b":{"dtype":"F16","shape":[2],"data_offsets":[16,20]},)"
                       R"("c":{"dtype":"BF16","shape":[],"data_offsets":[20,22]},)"
                       R"("d":{"dtype":"I64","shape":[1],"data_offsets":[22,30]}})",
                       F32Bytes({1, 2, 3, 4}) + Repeat('\x3C', 14)),
      SafetensorsBytes(R"({"x":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})", ""),
      SafetensorsBytes("{}", ""),
  };
}

std::vector<Input> HostileVariants(const std::vector<Input>& seeds, int per_seed,
                                   size_t max_truncated, uint32_t rng_seed) {
  std::mt19937 rng(rng_seed);
  std::vector<Input> variants;
  for (const Input& seed : seeds) {
    for (size_t length = 0; length < std::min(seed.size(), max_truncated); ++length) {
      variants.emplace_back(seed.begin(), seed.begin() + length);
    }
    for (int i = 0; i < per_seed; ++i) {
      Input variant = seed;
      const int corruptions = 1 + static_cast<int>(rng() % 3);
      for (int c = 0; c < corruptions; ++c) Corrupt(variant, rng);
      variants.push_back(std::move(variant));
    }
  }
  return variants;
}

}  // namespace tandem::fuzzing
