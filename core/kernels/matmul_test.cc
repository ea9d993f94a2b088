#include "core/kernels/matmul.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/base/check.h"
#include "core/base/status_matchers.h"
#include "core/kernels/matmul_internal.h"
#include "core/kernels/packed_matrix.h"
#include "core/kernels/vnni_emulation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

// A random weight matrix in `type`, quantized the way ggml's reference quantizers do.
struct TestMatrix {
  std::vector<uint8_t> bytes;
  WeightMatrix w;
  PackedArena packed;   // PackMatrix(w) for types with a panel layout
  PackedArena packed8;  // the int8 layout, where this CPU has one for the type (UsesInt8Panels)
};

void PutU16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

bool HasTestQuantizer(TensorType type) {
  return type == TensorType::kF32 || type == TensorType::kF16 || type == TensorType::kBF16 ||
         type == TensorType::kQ8_0 || type == TensorType::kQ4_0;
}

// The other quantized types: every bit pattern of their quants and sub-block scales is a valid
// block, so blocks are random bytes with their f16 super-block scales replaced by random
// values that keep weights within about ±1 (`max_scale` each, at these byte offsets).
struct RandomBlockLayout {
  TensorType type;
  std::vector<std::pair<int, float>> scales;  // (offset of an f16, its largest magnitude)
  bool signed_scales;                         // false: the f16s are >= 0 (d, dmin)
};

const RandomBlockLayout* RandomLayoutFor(TensorType type) {
  static const std::vector<RandomBlockLayout> layouts = {
      {TensorType::kQ4_1, {{0, 1.0f / 15}, {2, 1.0f}}, true},
      {TensorType::kQ5_0, {{0, 1.0f / 16}}, true},
      {TensorType::kQ5_1, {{0, 1.0f / 31}, {2, 1.0f}}, true},
      {TensorType::kIQ4_NL, {{0, 1.0f / 127}}, true},
      {TensorType::kQ2_K, {{80, 1.0f / 45}, {82, 1.0f / 15}}, false},
      {TensorType::kQ3_K, {{108, 1.0f / 128}}, true},
      {TensorType::kQ4_K, {{0, 1.0f / 945}, {2, 1.0f / 63}}, false},
      {TensorType::kQ5_K, {{0, 1.0f / 1953}, {2, 1.0f / 63}}, false},
      {TensorType::kQ6_K, {{208, 1.0f / 4096}}, true},
      {TensorType::kIQ4_XS, {{0, 1.0f / 4064}}, true},
  };
  for (const RandomBlockLayout& layout : layouts) {
    if (layout.type == type) return &layout;
  }
  return nullptr;
}

void FillRandomBlocks(const RandomBlockLayout& layout, int64_t blocks, std::mt19937& rng,
                      uint8_t* out) {
  const int64_t block_bytes = GetTraits(layout.type).bytes_per_block;
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> unit(layout.signed_scales ? -1.0f : 0.0f, 1.0f);
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* block = out + b * block_bytes;
    for (int64_t i = 0; i < block_bytes; ++i) block[i] = static_cast<uint8_t>(byte(rng));
    for (const auto& [offset, max_scale] : layout.scales) {
      const uint16_t h = F32ToFp16(unit(rng) * max_scale);
      std::memcpy(block + offset, &h, 2);
    }
  }
}

TestMatrix MakeMatrix(TensorType type, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  TestMatrix m;
  int64_t row_bytes = 0;
  switch (type) {
    case TensorType::kF32:
      row_bytes = 4 * cols;
      break;
    case TensorType::kF16:
    case TensorType::kBF16:
      row_bytes = 2 * cols;
      break;
    case TensorType::kQ8_0:
      row_bytes = cols / 32 * 34;
      break;
    case TensorType::kQ4_0:
      row_bytes = cols / 32 * 18;
      break;
    default:
      row_bytes = cols / GetTraits(type).block_size * GetTraits(type).bytes_per_block;
  }
  m.bytes.assign(rows * row_bytes, 0);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* row = m.bytes.data() + r * row_bytes;
    std::vector<float> v(cols);
    for (float& f : v) f = dist(rng);
    for (int64_t c = 0; c < cols; ++c) {
      if (type == TensorType::kF32) std::memcpy(row + 4 * c, &v[c], 4);
      if (type == TensorType::kF16) PutU16(row + 2 * c, F32ToFp16(v[c]));
      if (type == TensorType::kBF16) {
        uint32_t bits;
        std::memcpy(&bits, &v[c], 4);
        PutU16(row + 2 * c, static_cast<uint16_t>(bits >> 16));
      }
    }
    if (type == TensorType::kQ8_0 || type == TensorType::kQ4_0) {
      const bool q8 = type == TensorType::kQ8_0;
      for (int64_t b = 0; b < cols / 32; ++b) {
        uint8_t* block = row + b * (q8 ? 34 : 18);
        float amax = 0;
        for (int k = 0; k < 32; ++k) amax = std::max(amax, std::fabs(v[b * 32 + k]));
        const float d = q8 ? amax / 127 : amax / 8;
        PutU16(block, F32ToFp16(d));
        for (int k = 0; k < 32; ++k) {
          const float scaled = d == 0 ? 0 : v[b * 32 + k] / d;
          if (q8) {
            block[2 + k] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(scaled)));
          } else {
            const int q = std::clamp(static_cast<int>(std::lround(scaled)) + 8, 0, 15);
            block[2 + (k % 16)] |= static_cast<uint8_t>(k < 16 ? q : q << 4);
          }
        }
      }
    }
  }
  if (const RandomBlockLayout* layout = RandomLayoutFor(type)) {
    FillRandomBlocks(*layout, rows * row_bytes / GetTraits(type).bytes_per_block, rng,
                     m.bytes.data());
  } else if (!HasTestQuantizer(type)) {
    ADD_FAILURE() << "no test quantizer for " << TensorTypeName(type);
  }
  m.w = WeightMatrix{type, rows, cols, m.bytes.data(), row_bytes};
  if (HasPanelLayout(type)) {
    absl::StatusOr<PackedArena> arena = PackedArena::Create(PackedBytes(m.w));
    TANDEM_CHECK(arena.ok());
    m.packed = *std::move(arena);
    PackMatrix(m.w, m.packed.data());
    WeightMatrix w8 = m.w;
    w8.activations = ActivationPrecision::kInt8;
    if (UsesInt8Panels(w8)) {
      w8.int8_panels = true;
      absl::StatusOr<PackedArena> arena8 = PackedArena::Create(PackedBytes(w8));
      TANDEM_CHECK(arena8.ok());
      m.packed8 = *std::move(arena8);
      PackMatrix(w8, m.packed8.data());
    }
  }
  return m;
}

// A way to compute a matmul: an instruction set, reading the row layout or the panels, with
// an activation precision.
struct Path {
  KernelIsa isa;
  bool packed;
  ActivationPrecision activations = ActivationPrecision::kInt16;
};

std::string PathName(const Path& p) {
  return std::string(KernelIsaName(p.isa)) + (p.packed ? " packed " : " ") +
         std::string(ActivationPrecisionName(p.activations));
}

constexpr ActivationPrecision kPrecisions[] = {ActivationPrecision::kInt16,
                                               ActivationPrecision::kInt8};

// Every path the test matrix supports (paths this CPU lacks fall back to scalar), in both
// activation precisions.
std::vector<Path> PathsFor(const TestMatrix& m) {
  std::vector<Path> paths;
  for (ActivationPrecision a : kPrecisions) {
    for (KernelIsa isa : {KernelIsa::kScalar, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
      paths.push_back({isa, false, a});
    }
    if (m.packed.data() != nullptr) {
      paths.push_back({KernelIsa::kAvx512, true, a});
      paths.push_back({KernelIsa::kAvx512Vnni, true, a});
    }
  }
  return paths;
}

void RunPath(const Path& path, const TestMatrix& m, const float* x, int64_t n, float* y,
             ThreadPool& pool) {
  WeightMatrix w = m.w;
  w.packed = path.packed ? m.packed.data() : nullptr;
  w.activations = path.activations;
  // The VNNI path in int8 mode reads the int8 layout where the type has one, as a loaded
  // model's matrices do.
  if (path.packed && path.isa == KernelIsa::kAvx512Vnni &&
      path.activations == ActivationPrecision::kInt8 && m.packed8.data() != nullptr) {
    w.packed = m.packed8.data();
    w.int8_panels = true;
  }
  MatMulWithIsa(path.isa, w, x, n, y, pool);
}

bool IsFloat(TensorType type) {
  return type == TensorType::kF32 || type == TensorType::kF16 || type == TensorType::kBF16;
}

// What every path of `activations` must give within float rounding: exact math on the
// dequantized weights and, for a quantized type in int8 mode, x on the int8 grid (int16's
// grid is within the tolerance of exact x).
std::vector<float> Reference(const TestMatrix& m, ActivationPrecision activations,
                             const std::vector<float>& x, int64_t n) {
  std::vector<float> rounded = x;
  if (activations == ActivationPrecision::kInt8 && !IsFloat(m.w.type)) {
    internal::RoundToActivationGrid(activations, x.data(), n, m.w.cols, rounded.data());
  }
  std::vector<float> y(n * m.w.rows);
  MatMulReference(m.w, rounded.data(), n, y.data());
  return y;
}

std::vector<float> RandomActivations(int64_t n, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n * cols);
  for (float& f : x) f = dist(rng);
  return x;
}

struct MatMulCase {
  TensorType type;
  int64_t rows;
  int64_t cols;
  int64_t n;
};

void PrintTo(const MatMulCase& c, std::ostream* os) {
  *os << TensorTypeName(c.type) << " " << c.rows << "x" << c.cols << " n=" << c.n;
}

std::string CaseName(const ::testing::TestParamInfo<MatMulCase>& info) {
  return std::string(TensorTypeName(info.param.type)) + "_" + std::to_string(info.param.rows) +
         "x" + std::to_string(info.param.cols) + "_n" + std::to_string(info.param.n);
}

class MatMulTest : public ::testing::TestWithParam<MatMulCase> {};

TEST_P(MatMulTest, EveryPathMatchesTheReference) {
  const MatMulCase& c = GetParam();
  TestMatrix m = MakeMatrix(c.type, c.rows, c.cols, 7);
  const std::vector<float> x = RandomActivations(c.n, c.cols, 11);
  ThreadPool pool(2);
  for (const Path& path : PathsFor(m)) {
    const std::vector<float> expected = Reference(m, path.activations, x, c.n);
    std::vector<float> y(c.n * c.rows, NAN);
    RunPath(path, m, x.data(), c.n, y.data(), pool);
    for (int64_t i = 0; i < c.n * c.rows; ++i) {
      // float accumulation over `cols` terms of size ~1: error well under 1e-5 * cols.
      ASSERT_NEAR(y[i], expected[i], 1e-5 * c.cols) << PathName(path) << " element " << i;
    }
  }
}

TEST_P(MatMulTest, RowsAreBitIdenticalAloneInABatchAndOnAnyThreadCount) {
  const MatMulCase& c = GetParam();
  TestMatrix m = MakeMatrix(c.type, c.rows, c.cols, 3);
  const std::vector<float> x = RandomActivations(c.n, c.cols, 5);
  ThreadPool one(1), two(2);
  for (const Path& path : PathsFor(m)) {
    std::vector<float> batched(c.n * c.rows);
    RunPath(path, m, x.data(), c.n, batched.data(), two);
    for (int64_t i = 0; i < c.n; ++i) {
      std::vector<float> alone(c.rows);
      RunPath(path, m, x.data() + i * c.cols, 1, alone.data(), one);
      ASSERT_EQ(0, std::memcmp(alone.data(), batched.data() + i * c.rows, 4 * c.rows))
          << PathName(path) << " row " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Types, MatMulTest,
    ::testing::Values(
        MatMulCase{TensorType::kF32, 37, 64, 1},
        MatMulCase{TensorType::kF32, 33, 172, 9},  // 172: masked tail
        MatMulCase{TensorType::kF32, 5, 7, 6}, MatMulCase{TensorType::kF16, 41, 100, 5},
        MatMulCase{TensorType::kF16, 17, 8, 3},
        MatMulCase{TensorType::kF16, 33, 75, 17},  // odd columns, 3 panels
        MatMulCase{TensorType::kBF16, 19, 75, 4}, MatMulCase{TensorType::kBF16, 48, 64, 11},
        MatMulCase{TensorType::kQ8_0, 35, 96, 7}, MatMulCase{TensorType::kQ8_0, 3, 32, 1},
        MatMulCase{TensorType::kQ8_0, 64, 160, 16}, MatMulCase{TensorType::kQ8_0, 7, 64, 17},
        MatMulCase{TensorType::kQ4_0, 29, 160, 9}, MatMulCase{TensorType::kQ4_0, 64, 64, 2},
        MatMulCase{TensorType::kQ4_0, 50, 96, 13}, MatMulCase{TensorType::kQ4_1, 37, 96, 9},
        MatMulCase{TensorType::kQ5_0, 37, 64, 9}, MatMulCase{TensorType::kQ5_1, 21, 96, 3},
        MatMulCase{TensorType::kIQ4_NL, 37, 64, 9}, MatMulCase{TensorType::kQ2_K, 37, 512, 9},
        MatMulCase{TensorType::kQ3_K, 37, 256, 9}, MatMulCase{TensorType::kQ4_K, 37, 512, 9},
        MatMulCase{TensorType::kQ4_K, 64, 256, 1}, MatMulCase{TensorType::kQ4_K, 35, 768, 70},
        MatMulCase{TensorType::kQ5_K, 37, 512, 9}, MatMulCase{TensorType::kQ5_K, 16, 256, 13},
        MatMulCase{TensorType::kQ6_K, 37, 512, 9}, MatMulCase{TensorType::kQ6_K, 64, 256, 1},
        MatMulCase{TensorType::kQ6_K, 35, 768, 70}, MatMulCase{TensorType::kIQ4_XS, 37, 256, 9}),
    CaseName);

// AVX-512 takes plain rows 16 at a time (DotPlainRowsAvx512, the horizontal sums of 16 rows
// in one transposed tree): every output equals the one-row kernel's bit for bit, for every
// tile size, a partial last group of rows and a masked column tail.
TEST(MatMulPlainRowsTest, SixteenRowsAtOnceEqualTheOneRowKernel) {
  const KernelIsa isa = DetectKernelIsa();
  if (isa != KernelIsa::kAvx512 && isa != KernelIsa::kAvx512Vnni) {
    GTEST_SKIP() << "no AVX-512 on this CPU";
  }
  struct Shape {
    TensorType type;
    int64_t rows, cols;
  };
  const Shape shapes[] = {{TensorType::kF32, 37, 64},  {TensorType::kF32, 33, 172},
                          {TensorType::kF32, 5, 7},    {TensorType::kF32, 512, 64},
                          {TensorType::kF16, 41, 100}, {TensorType::kBF16, 19, 75}};
  ThreadPool pool(2);
  for (const Shape& shape : shapes) {
    TestMatrix m = MakeMatrix(shape.type, shape.rows, shape.cols, 71);
    for (int64_t n : {1, 2, 5, 8, 9, 17}) {
      const std::vector<float> x = RandomActivations(n, shape.cols, 73);
      std::vector<float> y(n * shape.rows, NAN);
      MatMulWithIsa(KernelIsa::kAvx512, m.w, x.data(), n, y.data(), pool);
      for (int64_t r = 0; r < shape.rows; ++r) {
        for (int64_t t = 0; t < n; ++t) {
          float one;
          internal::DotTileAvx512(shape.type, m.w.data + r * m.w.row_bytes,
                                  x.data() + t * shape.cols, shape.cols, 1, shape.cols, &one);
          ASSERT_EQ(0, std::memcmp(&one, &y[t * shape.rows + r], sizeof(float)))
              << TensorTypeName(shape.type) << " " << shape.rows << "x" << shape.cols << " n=" << n
              << " row " << r << " x row " << t;
        }
      }
    }
  }
}

// The types added with the K-quants (every path this CPU has, packed or not): a row's output is
// bit-identical for every batch size 1..9 and at 1, 2 or 3 threads.
TEST(MatMulBatchInvarianceTest, EveryTypeGivesTheSameRowsForAnyBatchAndThreadCount) {
  const TensorType types[] = {TensorType::kQ4_1,   TensorType::kQ5_0, TensorType::kQ5_1,
                              TensorType::kIQ4_NL, TensorType::kQ2_K, TensorType::kQ3_K,
                              TensorType::kQ4_K,   TensorType::kQ5_K, TensorType::kQ6_K,
                              TensorType::kIQ4_XS};
  ThreadPool one(1), two(2), three(3);
  for (TensorType type : types) {
    TestMatrix m = MakeMatrix(type, 41, 512, 31);
    const int64_t max_n = 9;
    const std::vector<float> x = RandomActivations(max_n, m.w.cols, 37);
    for (const Path& path : PathsFor(m)) {
      std::vector<float> full(max_n * m.w.rows);
      RunPath(path, m, x.data(), max_n, full.data(), one);
      for (ThreadPool* pool : {&one, &two, &three}) {
        for (int64_t n = 1; n <= max_n; ++n) {
          std::vector<float> part(n * m.w.rows, NAN);
          RunPath(path, m, x.data(), n, part.data(), *pool);
          ASSERT_EQ(0, std::memcmp(part.data(), full.data(), 4 * part.size()))
              << TensorTypeName(type) << " " << PathName(path) << " n=" << n;
        }
      }
    }
  }
}

// The packed path splits n rows into tiles by n (13 rows run as 7 + 6) and groups of 64:
// every prefix of a 70-row batch, i.e. every tiling, gives each row bit-identical results.
TEST(MatMulPackedTest, EveryBatchSizeGivesTheSameRows) {
  for (TensorType type :
       {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kF16, TensorType::kBF16,
        TensorType::kQ5_0, TensorType::kQ4_1, TensorType::kQ5_1, TensorType::kIQ4_NL,
        TensorType::kIQ4_XS, TensorType::kQ2_K, TensorType::kQ3_K, TensorType::kQ4_K,
        TensorType::kQ5_K, TensorType::kQ6_K}) {
    TestMatrix m = MakeMatrix(type, 37, GetTraits(type).block_size == 256 ? 512 : 96, 13);
    ASSERT_NE(m.packed.data(), nullptr) << TensorTypeName(type);
    const int64_t max_n = 70;
    const std::vector<float> x = RandomActivations(max_n, m.w.cols, 17);
    ThreadPool pool(2);
    for (const Path& path : PathsFor(m)) {
      if (!path.packed) continue;
      std::vector<float> full(max_n * m.w.rows);
      RunPath(path, m, x.data(), max_n, full.data(), pool);
      for (int64_t n = 1; n < max_n; ++n) {
        std::vector<float> part(n * m.w.rows);
        RunPath(path, m, x.data(), n, part.data(), pool);
        ASSERT_EQ(0, std::memcmp(part.data(), full.data(), 4 * part.size()))
            << TensorTypeName(type) << " " << PathName(path) << " n=" << n;
      }
    }
  }
}

// Matrices sharing x in one parallel loop give exactly what each gives alone: for panel
// paths (Q8_0, F16) and for a mix of paths (F32 rows with Q8_0 panels).
TEST(MatMulSharedTest, EachOutputEqualsItsOwnMatMul) {
  const std::vector<std::vector<TensorType>> sets = {
      {TensorType::kQ8_0, TensorType::kQ8_0, TensorType::kQ8_0},
      {TensorType::kF16, TensorType::kF16},
      {TensorType::kF32, TensorType::kQ8_0},
      {TensorType::kQ4_K, TensorType::kQ4_K, TensorType::kQ6_K},  // a Q4_K_M layer's q, k, v
      {TensorType::kQ5_0, TensorType::kQ8_0, TensorType::kQ2_K}};
  ThreadPool pool(2);
  for (const std::vector<TensorType>& types : sets) {
    std::vector<TestMatrix> matrices;
    const int64_t rows[] = {35, 16, 70};
    const int64_t cols =
        types.back() == TensorType::kQ6_K || types.back() == TensorType::kQ2_K ? 256 : 96;
    for (size_t i = 0; i < types.size(); ++i) {
      matrices.push_back(MakeMatrix(types[i], rows[i], cols, static_cast<uint32_t>(20 + i)));
    }
    for (int64_t n : {1, 5, 13}) {
      for (ActivationPrecision a : kPrecisions) {
        const std::vector<float> x = RandomActivations(n, cols, 23);
        std::vector<std::vector<float>> shared(types.size()), alone(types.size());
        std::vector<MatMulOutput> outputs;
        for (size_t i = 0; i < types.size(); ++i) {
          WeightMatrix& w = matrices[i].w;
          w.packed = matrices[i].packed.data();
          w.activations = a;
          w.int8_panels = a == ActivationPrecision::kInt8 && matrices[i].packed8.data() != nullptr;
          if (w.int8_panels) w.packed = matrices[i].packed8.data();
          shared[i].assign(n * w.rows, NAN);
          alone[i].assign(n * w.rows, NAN);
          outputs.push_back({&w, shared[i].data()});
          MatMul(w, x.data(), n, alone[i].data(), pool);
        }
        MatMulShared(outputs, x.data(), n, pool);
        for (size_t i = 0; i < types.size(); ++i) {
          EXPECT_EQ(0, std::memcmp(shared[i].data(), alone[i].data(), 4 * shared[i].size()))
              << TensorTypeName(types[i]) << " output " << i << " n=" << n << " "
              << ActivationPrecisionName(a);
        }
      }
    }
  }
}

TEST(MatMulPackedTest, PanelsKeepTheRowLayoutsSize) {
  // 16 rows of a panel take exactly 16 rows' bytes, so decode streams no extra memory.
  EXPECT_EQ(PanelBytes(TensorType::kQ8_0, 960), 16 * 960 / 32 * 34);
  EXPECT_EQ(PanelBytes(TensorType::kQ4_0, 960), 16 * 960 / 32 * 18);
  EXPECT_EQ(PanelBytes(TensorType::kF16, 75), 16 * 75 * 2);
  EXPECT_EQ(PanelBytes(TensorType::kQ4_K, 512), 16 * 2 * 144);
  EXPECT_EQ(PanelBytes(TensorType::kQ6_K, 256), 16 * 210);
  EXPECT_EQ(PanelBytes(TensorType::kQ5_0, 960), 16 * 960 / 32 * 22);
  EXPECT_EQ(PanelBytes(TensorType::kIQ4_XS, 256), 16 * 136);
  EXPECT_EQ(PanelCount(33), 3);
  EXPECT_FALSE(HasPanelLayout(TensorType::kF32));
}

// The VNNI kernel runs only on AVX-512 VNNI CPUs. Its logic is tested everywhere through a
// scalar emulation (vnni_emulation.h: vpdpwssd's exact int32 arithmetic, the same float
// steps); where the CPU has VNNI, the kernel must equal the emulation bit for bit. Nothing is
// skipped: off VNNI hardware the kernel-vs-emulation checks say so and the emulation's own
// checks still run.
bool HasVnni() { return DetectKernelIsa() == KernelIsa::kAvx512Vnni; }

void NoteKernelNotRun(const char* what) {
  std::printf(
      "[ NOTE     ] %s: this CPU has no AVX-512 VNNI, so the kernel itself did not run; "
      "its logic was checked through the scalar emulation\n",
      what);
  ::testing::Test::RecordProperty("vnni_kernel_run", "no");
}

using QuantizeFn = void (*)(const float*, int64_t, int64_t, int16_t*, float*, int32_t*);

// The VNNI path's activations: per 32-column block, q = x · (32767 / max|x|) rounded to
// nearest even, scale = max|x| / 32767; an all-zero block gives zeros and scale 0.
void ExpectInt16Quantization(QuantizeFn quantize) {
  std::vector<float> x(2 * 64, 0.0f);  // 2 rows x 2 blocks
  x[0] = -2.0f;                        // row 0 block 0: max|x| = 2
  x[1] = 1.0f;
  x[2] = 2.0f / 32767 * 0.5f;   // exactly half a step: ties to even (0)
  x[3] = 2.0f / 32767 * 1.5f;   // one and a half steps: ties to even (2)
  x[4] = 2.0f / 32767 * 1.25f;  // rounds to 1
  // row 0 block 1 stays zero
  x[64 + 32] = 0.5f;  // row 1 block 1: max|x| = 0.5
  x[64 + 33] = -0.25f;
  std::vector<int16_t> q(x.size(), 99);
  std::vector<float> scales(4, -1.0f);
  std::vector<int32_t> sums(4, -1);
  quantize(x.data(), 2, 64, q.data(), scales.data(), sums.data());
  EXPECT_EQ(sums, (std::vector<int32_t>{-32767 + 16384 + 0 + 2 + 1, 0, 0, 32767 - 16384}));
  EXPECT_EQ(scales[0], 2.0f / 32767.0f);
  EXPECT_EQ(scales[1], 0.0f);
  EXPECT_EQ(scales[2], 0.0f);
  EXPECT_EQ(scales[3], 0.5f / 32767.0f);
  EXPECT_EQ(q[0], -32767);
  EXPECT_EQ(q[1], 16384);  // 32767 / 2 = 16383.5: ties to even
  EXPECT_EQ(q[2], 0);
  EXPECT_EQ(q[3], 2);
  EXPECT_EQ(q[4], 1);
  for (int c = 32; c < 64; ++c) EXPECT_EQ(q[c], 0) << c;
  EXPECT_EQ(q[64 + 32], 32767);
  EXPECT_EQ(q[64 + 33], -16384);
}

TEST(QuantizeRowsInt16Test, BlocksMapTheirLargestMagnitudeTo32767) {
  ExpectInt16Quantization(
      [](const float* x, int64_t n, int64_t cols, int16_t* q, float* scales, int32_t* sums) {
        vnni_emulation::QuantizeRowsInt16(x, n, cols, q, scales, sums);
      });
  if (!HasVnni()) return NoteKernelNotRun("QuantizeRowsInt16");
  ExpectInt16Quantization(
      [](const float* x, int64_t n, int64_t cols, int16_t* q, float* scales, int32_t* sums) {
        internal::QuantizeRowsInt16(x, n, cols, q, scales, sums);
      });
}

// int8 mode: the largest magnitude maps to 127, ties to even, and the kernel's bytes equal
// its int16 values.
TEST(QuantizeRowsInt16Test, Int8BlocksMapTheirLargestMagnitudeTo127) {
  std::vector<float> x(64, 0.0f);
  x[0] = -2.0f;
  x[1] = 1.0f;                // 63.5: ties to even (64)
  x[2] = 2.0f / 127 * 0.5f;   // half a step: 0
  x[3] = 2.0f / 127 * 1.5f;   // 2
  x[4] = 2.0f / 127 * 1.25f;  // 1
  x[32] = 0.5f;
  x[33] = -0.25f;  // -63.5: -64
  const std::vector<int16_t> want = {-127, 64, 0, 2, 1};
  std::vector<int16_t> q(64, 99);
  std::vector<float> scales(2, -1);
  std::vector<int32_t> sums(2, -1);
  vnni_emulation::QuantizeRowsInt16(x.data(), 1, 64, q.data(), scales.data(), sums.data(),
                                    ActivationPrecision::kInt8);
  EXPECT_EQ(std::vector<int16_t>(q.begin(), q.begin() + 5), want);
  EXPECT_EQ(q[32], 127);
  EXPECT_EQ(q[33], -64);
  EXPECT_EQ(sums, (std::vector<int32_t>{-127 + 64 + 0 + 2 + 1, 127 - 64}));
  EXPECT_EQ(scales[0], 2.0f / 127.0f);
  EXPECT_EQ(scales[1], 0.5f / 127.0f);
  if (!HasVnni()) return NoteKernelNotRun("QuantizeRowsInt16");
  std::vector<int16_t> kq(64, 99);
  std::vector<int8_t> kq8(64, 99);
  std::vector<float> kscales(2, -1);
  std::vector<int32_t> ksums(2, -1);
  std::vector<int32_t> khalf(4, -1);
  internal::QuantizeRowsInt16(x.data(), 1, 64, kq.data(), kscales.data(), ksums.data(),
                              ActivationPrecision::kInt8, kq8.data(), khalf.data());
  EXPECT_EQ(kq, q);
  EXPECT_EQ(ksums, sums);
  EXPECT_EQ(kscales, scales);
  for (int c = 0; c < 64; ++c) EXPECT_EQ(kq8[c], kq[c]) << c;
  EXPECT_EQ(khalf, (std::vector<int32_t>{-127 + 64 + 0 + 2 + 1, 0, 127 - 64, 0}));
}

TEST(QuantizeRowsInt16Test, KernelEqualsEmulationBitForBit) {
  // Block counts around the kernel's groups of 16 (a 5-row 960-wide verify is 150 blocks),
  // with all-zero blocks, a lone large value and magnitudes over many octaves.
  struct Shape {
    int64_t n, cols;
  };
  if (!HasVnni()) return NoteKernelNotRun("QuantizeRowsInt16");
  std::mt19937 rng(77);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const Shape& shape : {Shape{1, 32}, Shape{1, 512}, Shape{3, 224}, Shape{5, 960},
                             Shape{1, 2560}, Shape{5, 2560}}) {
    const int64_t size = shape.n * shape.cols, blocks = size / 32;
    std::vector<float> x(size);
    for (int64_t i = 0; i < size; ++i) {
      x[i] = normal(rng) * std::ldexp(1.0f, static_cast<int>(i / 32 % 24) - 12);
    }
    for (int64_t k = 0; k < 32; ++k) x[(blocks / 2) * 32 + k] = 0.0f;
    x[size - 1] = -3e4f;
    std::vector<int16_t> q(size), want_q(size);
    std::vector<float> scales(blocks), want_scales(blocks);
    std::vector<int32_t> sums(blocks), want_sums(blocks);
    for (ActivationPrecision a : kPrecisions) {
      std::vector<int8_t> q8(size);
      std::vector<int32_t> half(size / 16);
      internal::QuantizeRowsInt16(x.data(), shape.n, shape.cols, q.data(), scales.data(),
                                  sums.data(), a, q8.data(), half.data());
      vnni_emulation::QuantizeRowsInt16(x.data(), shape.n, shape.cols, want_q.data(),
                                        want_scales.data(), want_sums.data(), a);
      EXPECT_EQ(q, want_q) << shape.n << " x " << shape.cols;
      if (a == ActivationPrecision::kInt8) {
        EXPECT_EQ(std::vector<int16_t>(q8.begin(), q8.end()), q) << shape.n << " x " << shape.cols;
        for (int64_t h = 0; h < size / 16; ++h) {
          int32_t sum = 0;
          for (int c = 0; c < 16; ++c) sum += q[16 * h + c];
          ASSERT_EQ(half[h], sum) << shape.n << " x " << shape.cols << " half " << h;
        }
      }
      EXPECT_EQ(sums, want_sums) << shape.n << " x " << shape.cols;
      for (int64_t b = 0; b < blocks; ++b) {
        ASSERT_EQ(scales[b], want_scales[b]) << shape.n << " x " << shape.cols << " block " << b;
      }
    }
  }
}

struct VpdpwssdCase {
  int32_t acc;
  int16_t a0, a1, b0, b1;
  int32_t expected;
};

TEST(VnniEmulationTest, VpdpwssdAddsBothProductsAndWraps) {
  const VpdpwssdCase cases[] = {
      {0, 1, 2, 3, 4, 11},
      {-5, -3, 7, 2, -1, -5 - 6 - 7},
      {INT32_MAX, 1, 0, 1, 0, INT32_MIN},              // wraps, no saturation
      {0, -32768, -32768, -32768, -32768, INT32_MIN},  // 2 · 2^30 = 2^31 wraps
      {0, 32767, -32768, 32767, 32767, 32767 * 32767 - 32768 * 32767},
  };
  for (const VpdpwssdCase& c : cases) {
    EXPECT_EQ(vnni_emulation::Vpdpwssd(c.acc, c.a0, c.a1, c.b0, c.b1), c.expected)
        << c.acc << " " << c.a0 << " " << c.a1 << " " << c.b0 << " " << c.b1;
  }
}

struct VnniShape {
  TensorType type;
  int64_t rows, cols, n;
};

const VnniShape kVnniShapes[] = {{TensorType::kQ8_0, 37, 96, 1},  {TensorType::kQ8_0, 16, 32, 13},
                                 {TensorType::kQ8_0, 70, 160, 5}, {TensorType::kQ4_0, 37, 96, 1},
                                 {TensorType::kQ4_0, 33, 64, 9},  {TensorType::kQ4_0, 64, 256, 70}};

// The int16 activations cost at most max|x| / 65534 per element, so a row's dot product moves
// by at most Σ|W[r, c]| · max|x| / 65534; float rounding adds well under 1e-5 per column.
TEST(VnniEmulationTest, MatchesTheFloatReferenceWithinTheActivationRounding) {
  for (const VnniShape& s : kVnniShapes) {
    TestMatrix m = MakeMatrix(s.type, s.rows, s.cols, 5);
    const std::vector<float> x = RandomActivations(s.n, s.cols, 9);
    std::vector<float> expected(s.n * s.rows), y(s.n * s.rows, NAN);
    MatMulReference(m.w, x.data(), s.n, expected.data());
    WeightMatrix w = m.w;
    w.packed = m.packed.data();
    vnni_emulation::MatMul(w, x.data(), s.n, y.data());
    float xmax = 0;
    for (float v : x) xmax = std::max(xmax, std::fabs(v));
    std::vector<float> dense(s.cols);
    for (int64_t r = 0; r < s.rows; ++r) {
      ASSERT_OK(DequantizeRow(
          s.type, absl::MakeConstSpan(m.bytes.data() + r * m.w.row_bytes, m.w.row_bytes),
          absl::MakeSpan(dense)));
      float wsum = 0;
      for (float v : dense) wsum += std::fabs(v);
      const float bound = wsum * xmax / 65534 + 1e-5f * s.cols;
      for (int64_t t = 0; t < s.n; ++t) {
        ASSERT_NEAR(y[t * s.rows + r], expected[t * s.rows + r], bound)
            << TensorTypeName(s.type) << " " << s.rows << "x" << s.cols << " row " << r;
      }
    }
  }
}

TEST(VnniEmulationTest, TheKernelEqualsTheEmulationBitForBit) {
  if (!HasVnni()) return NoteKernelNotRun("the VNNI panel kernel");
  ThreadPool pool(2);
  for (const VnniShape& s : kVnniShapes) {
    for (ActivationPrecision a : kPrecisions) {
      TestMatrix m = MakeMatrix(s.type, s.rows, s.cols, 5);
      const std::vector<float> x = RandomActivations(s.n, s.cols, 9);
      std::vector<float> kernel(s.n * s.rows, NAN), emulated(s.n * s.rows, NAN);
      WeightMatrix w = m.w;
      w.packed = m.packed.data();
      w.activations = a;
      MatMulWithIsa(KernelIsa::kAvx512Vnni, w, x.data(), s.n, kernel.data(), pool);
      vnni_emulation::MatMul(w, x.data(), s.n, emulated.data());
      EXPECT_EQ(0, std::memcmp(kernel.data(), emulated.data(), 4 * kernel.size()))
          << TensorTypeName(s.type) << " " << s.rows << "x" << s.cols << " n=" << s.n << " "
          << ActivationPrecisionName(a);
    }
  }
}

// The block types' integer panel kernel exists twice, for VNNI (vpdpwssd) and for plain
// AVX-512 (vpmaddwd + vpaddd): the same exact integer sums and float steps, so the same bits.
TEST(KQuantPanelTest, TheAvx512KernelEqualsTheVnniKernelBitForBit) {
  if (!HasVnni()) return NoteKernelNotRun("the VNNI K-quant panel kernel");
  ThreadPool pool(2);
  for (TensorType type :
       {TensorType::kQ5_0, TensorType::kQ4_1, TensorType::kQ5_1, TensorType::kIQ4_NL,
        TensorType::kIQ4_XS, TensorType::kQ2_K, TensorType::kQ3_K, TensorType::kQ4_K,
        TensorType::kQ5_K, TensorType::kQ6_K}) {
    TestMatrix m = MakeMatrix(type, 37, 512, 41);
    ASSERT_NE(m.packed.data(), nullptr) << TensorTypeName(type);
    for (int64_t n : {1, 5, 13}) {
      for (ActivationPrecision a : kPrecisions) {
        const std::vector<float> x = RandomActivations(n, m.w.cols, 43);
        std::vector<float> vnni(n * m.w.rows, NAN), avx512(n * m.w.rows, NAN);
        RunPath({KernelIsa::kAvx512Vnni, true, a}, m, x.data(), n, vnni.data(), pool);
        RunPath({KernelIsa::kAvx512, true, a}, m, x.data(), n, avx512.data(), pool);
        EXPECT_EQ(0, std::memcmp(vnni.data(), avx512.data(), 4 * vnni.size()))
            << TensorTypeName(type) << " n=" << n << " " << ActivationPrecisionName(a);
      }
    }
  }
}

// The vpdpbusd kernels read the int8 layout; on the same int8 activations the int16 layout's
// kernels (vpdpwssd) give the same exact integer sums, and both take the same float steps: the
// same bits, for every tiling (n up to a 70-row prefill group) and a partial last panel.
TEST(Int8PanelTest, TheVpdpbusdKernelEqualsTheInt16KernelOnInt8Activations) {
  if (!HasVnni()) return NoteKernelNotRun("the int8 panel kernels");
  ThreadPool pool(2);
  int checked = 0;
  for (TensorType type :
       {TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ5_0,
        TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K, TensorType::kQ2_K,
        TensorType::kQ3_K, TensorType::kIQ4_NL, TensorType::kIQ4_XS, TensorType::kQ5_1}) {
    TestMatrix m = MakeMatrix(type, 45, GetTraits(type).block_size == 256 ? 512 : 160, 51);
    ASSERT_NE(m.packed8.data(), nullptr) << TensorTypeName(type) << " has no int8 layout";
    ++checked;
    for (int64_t n : {1, 2, 3, 5, 8, 9, 13, 16, 70}) {
      const std::vector<float> x = RandomActivations(n, m.w.cols, 53);
      WeightMatrix w16 = m.w, w8 = m.w;
      w16.packed = m.packed.data();
      w16.activations = ActivationPrecision::kInt8;
      w8.packed = m.packed8.data();
      w8.activations = ActivationPrecision::kInt8;
      w8.int8_panels = true;
      std::vector<float> y16(n * m.w.rows, NAN), y8(n * m.w.rows, NAN);
      MatMulWithIsa(KernelIsa::kAvx512Vnni, w16, x.data(), n, y16.data(), pool);
      MatMulWithIsa(KernelIsa::kAvx512Vnni, w8, x.data(), n, y8.data(), pool);
      ASSERT_EQ(0, std::memcmp(y16.data(), y8.data(), 4 * y8.size()))
          << TensorTypeName(type) << " n=" << n;
    }
  }
  EXPECT_EQ(checked, 12);  // every quantized type with a panel layout
}

TEST(ActivationPrecisionTest, NamesParseBackAndOthersAreRefused) {
  for (ActivationPrecision a : kPrecisions) {
    EXPECT_THAT(ParseActivationPrecision(ActivationPrecisionName(a)), testing::IsOkAndHolds(a));
  }
  EXPECT_THAT(ParseActivationPrecision("fp8"),
              testing::StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("'fp8'")));
}

TEST(MatMulIsaTest, DetectsAPathThisCpuRuns) {
  const KernelIsa isa = DetectKernelIsa();
  EXPECT_THAT(std::string(KernelIsaName(isa)),
              ::testing::AnyOf("scalar", "avx2", "avx512", "avx512vnni"));
}

}  // namespace
}  // namespace tandem
