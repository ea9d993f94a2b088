#include "core/kernels/matmul.h"

#include <cpuid.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "core/base/check.h"
#include "core/kernels/matmul_internal.h"
#include "core/kernels/packed_kquant.h"
#include "core/kernels/packed_matrix.h"

namespace tandem {
namespace {

using internal::DotTileFn;
using internal::kMaxTile;

// Rows of W handled together: they stay in cache while every x tile passes over them.
constexpr int64_t kRowBlock = 16;
static_assert(kRowBlock <= 16, "DotPlainRowsAvx512 takes up to 16 rows");
// Below this many multiply-adds a matmul runs on the calling thread: waking another thread
// costs more than it saves.
constexpr int64_t kMinParallelWork = int64_t{1} << 17;

DotTileFn DotTileFor(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kAvx512:
    case KernelIsa::kAvx512Vnni:
      return internal::DotTileAvx512;
    case KernelIsa::kAvx2:
      return internal::DotTileAvx2;
    case KernelIsa::kScalar:
      break;
  }
  return internal::DotTileScalar;
}

// CPUID leaf 1, ECX bit 29 (clang before 16 has no "f16c" for __builtin_cpu_supports).
bool HasF16c() {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}

bool IsaAvailable(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
    case KernelIsa::kAvx512Vnni:
      return IsaAvailable(KernelIsa::kAvx512) && __builtin_cpu_supports("avx512vnni");
    case KernelIsa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && HasF16c();
    case KernelIsa::kScalar:
      return true;
  }
  return false;
}

// Most outputs MatMulShared runs as one parallel loop (q, k, v); more run one by one.
constexpr size_t kMaxSharedOutputs = 4;

// Whether `w` takes a panel path with `isa`, and which one.
// kInt16: the K-quant panel kernel on plain AVX-512 (the VNNI kernel's int16 activations and
// arithmetic, vpdpwssd emulated exactly).
enum class PanelPath { kNone, kFloat, kVnni, kInt16 };
PanelPath PanelPathFor(KernelIsa isa, const WeightMatrix& w) {
  if (w.packed == nullptr) return PanelPath::kNone;
  // The int8 layout has only the VNNI kernels; other paths (tests choosing one) read the rows.
  if (w.int8_panels) return isa == KernelIsa::kAvx512Vnni ? PanelPath::kVnni : PanelPath::kNone;
  if (isa == KernelIsa::kAvx512Vnni &&
      (w.type == TensorType::kQ8_0 || w.type == TensorType::kQ4_0 ||
       internal::IsKQuantPanelType(w.type))) {
    return PanelPath::kVnni;
  }
  // The K-quant panels have only the integer kernel; AVX2 and scalar read their rows.
  if (internal::IsKQuantPanelType(w.type)) {
    return isa == KernelIsa::kAvx512 ? PanelPath::kInt16 : PanelPath::kNone;
  }
  if (isa == KernelIsa::kAvx512 || isa == KernelIsa::kAvx512Vnni) return PanelPath::kFloat;
  return PanelPath::kNone;
}

// The packed paths, for outputs that share x and take the same path: threads split work
// units (a panel; a pair of panels on the VNNI path, which shares each activation load
// between two panels) of all the outputs in one parallel loop. The kernel applies a unit to
// up to kMaxPanelGroup x rows per pass, so its panels stream from memory once for typical
// batches and stay in cache for the further passes of a long prefill chunk. The VNNI path
// quantizes x once, into the caller's scratch (or the calling thread's), so decode steps
// allocate nothing.
// Batches from this many rows quantize their activations on all threads (a 5-row verify's
// few microseconds of quantizing cost less than a parallel loop's hand-over).
constexpr int64_t kMinParallelQuantizeRows = 8;

void MatMulPanels(PanelPath path, absl::Span<const MatMulOutput> outputs, const float* x, int64_t n,
                  ThreadPool& pool, MatMulScratch* scratch) {
  // Programmer invariant: both callers pass one output or check the count (MatMulShared);
  // the count is the decoder's, never a file's or a request's.
  TANDEM_CHECK(outputs.size() <= kMaxSharedOutputs);
  const int64_t cols = outputs[0].w->cols;
  internal::Int16Rows xq{};
  if (path == PanelPath::kVnni || path == PanelPath::kInt16) {
    thread_local MatMulScratch thread_scratch;
    MatMulScratch& b = scratch != nullptr ? *scratch : thread_scratch;
    const int64_t blocks = n * cols / 32;
    const ActivationPrecision precision =
        outputs[0].w->int8_panels ? ActivationPrecision::kInt8 : outputs[0].w->activations;
    // What the call's kernels read: the int16 values (every path but the int8 panels), the
    // bytes (the int8 panels), the 16-column sums (the int8 panels of ReadsHalfSums types).
    // Nothing else is written; what is written is the same either way.
    bool int16_values = false, bytes = false, half_sums = false;
    for (const MatMulOutput& o : outputs) {
      int16_values = int16_values || !o.w->int8_panels;
      bytes = bytes || o.w->int8_panels;
      half_sums = half_sums || (o.w->int8_panels && internal::ReadsHalfSums(o.w->type));
    }
    if (static_cast<int64_t>(b.q.size()) < n * cols) b.q.resize(n * cols);
    if (bytes && static_cast<int64_t>(b.q8.size()) < n * cols) {
      b.q8.resize(n * cols);
      b.half_sums.resize(n * cols / 16);
    }
    if (static_cast<int64_t>(b.scales.size()) < blocks) {
      b.scales.resize(blocks);
      b.sums.resize(blocks);
      b.scaled_sums.resize(blocks);
    }
    // Row by row, so a batch's rows split across the threads (a row's blocks are the same
    // either way): on one thread it was ~5 % of a 16-row step, the others waiting.
    const auto quantize = [&](int64_t begin, int64_t end) {
      internal::QuantizeRowsInt16(x + begin * cols, end - begin, cols,
                                  int16_values ? b.q.data() + begin * cols : nullptr,
                                  b.scales.data() + begin * cols / 32,
                                  b.sums.data() + begin * cols / 32, precision,
                                  bytes ? b.q8.data() + begin * cols : nullptr,
                                  half_sums ? b.half_sums.data() + begin * cols / 16 : nullptr);
      for (int64_t i = begin * cols / 32; i < end * cols / 32; ++i) {
        b.scaled_sums[i] = b.scales[i] * static_cast<float>(b.sums[i]);
      }
    };
    if (n >= kMinParallelQuantizeRows && pool.num_threads() > 1) {
      pool.ParallelFor(n, quantize);
    } else {
      quantize(0, n);
    }
    xq = internal::Int16Rows{b.q.data(), b.scales.data(), b.sums.data(),
                             bytes ? b.q8.data() : nullptr,
                             half_sums ? b.half_sums.data() : nullptr,
                             b.scaled_sums.data()};  // read by all threads
  }
  const int64_t panels_per_unit = path == PanelPath::kFloat ? 1 : 2;
  int64_t first_unit[kMaxSharedOutputs + 1] = {0};
  int64_t work = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const WeightMatrix& w = *outputs[i].w;
    first_unit[i + 1] =
        first_unit[i] + (PanelCount(w.rows) + panels_per_unit - 1) / panels_per_unit;
    work += w.rows * w.cols * n;
  }
  const int64_t units = first_unit[outputs.size()];
  pool.ParallelFor(
      units,
      [&](int64_t begin, int64_t end) {
        size_t i = 0;
        for (int64_t unit = begin; unit < end; ++unit) {
          while (unit >= first_unit[i + 1]) ++i;
          const WeightMatrix& w = *outputs[i].w;
          const int64_t first_panel = (unit - first_unit[i]) * panels_per_unit;
          const int count =
              static_cast<int>(std::min(panels_per_unit, PanelCount(w.rows) - first_panel));
          for (int64_t r = 0; r < n; r += internal::kMaxPanelGroup) {
            const int group = static_cast<int>(std::min<int64_t>(internal::kMaxPanelGroup, n - r));
            float* y = outputs[i].y + r * w.rows;
            const internal::Int16Rows rows{
                xq.q + r * cols, xq.scales + r * cols / 32, xq.sums + r * cols / 32,
                xq.q8 == nullptr ? nullptr : xq.q8 + r * cols,
                xq.half_sums == nullptr ? nullptr : xq.half_sums + r * cols / 16,
                xq.scaled_sums == nullptr ? nullptr : xq.scaled_sums + r * cols / 32};
            if (path == PanelPath::kInt16) {
              internal::PanelsAvx512KQuant(w, first_panel, count, rows, group, y);
            } else if (path == PanelPath::kVnni && internal::IsKQuantPanelType(w.type)) {
              internal::PanelsVnniKQuant(w, first_panel, count, rows, group, y);
            } else if (path == PanelPath::kVnni) {
              internal::PanelsVnni(w, first_panel, count, rows, group, y);
            } else {
              internal::PanelGroupAvx512(w, first_panel, x + r * cols, group, y);
            }
          }
        }
      },
      work < kMinParallelWork ? units : 1);
}

}  // namespace

namespace internal {

bool DotTileDecodes(TensorType type) {
  switch (type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
    case TensorType::kQ8_0:
    case TensorType::kQ4_0:
      return true;
    default:
      return false;
  }
}

void DecodeRows(const WeightMatrix& w, int64_t begin, int64_t end, float* out) {
  for (int64_t r = begin; r < end; ++r) {
    float* row = out + (r - begin) * w.cols;
    const absl::Status status =
        DequantizeRow(w.type, absl::MakeConstSpan(w.data + r * w.row_bytes, w.row_bytes),
                      absl::MakeSpan(row, w.cols));
    // The loader binds only types DequantizeRow supports, with rows of RowBytes(type, cols)
    // (DequantizeRowTest.SupportedBitMatchesTheDequantiser), so this cannot fail; were it
    // to, the row reads as zeros rather than taking every session of the process down.
    if (!status.ok()) std::fill(row, row + w.cols, 0.0f);
  }
}

// The float paths in int8 mode multiply x rounded to the int8 grid of its 32-column blocks,
// s · q with s and q as the integer paths quantize them, so that every path of the mode sees
// the same activations (their float steps differ, as in int16 mode).
void RoundToActivationGrid(ActivationPrecision precision, const float* x, int64_t n, int64_t cols,
                           float* out) {
  const float limit = static_cast<float>(ActivationLimit(precision));
  for (int64_t i = 0; i < n * cols; i += 32) {
    float amax = 0;
    for (int k = 0; k < 32; ++k) amax = std::max(amax, std::fabs(x[i + k]));
    const float inv = amax > 0 ? limit / amax : 0.0f;
    const float scale = amax / limit;
    for (int k = 0; k < 32; ++k) out[i + k] = scale * std::nearbyint(x[i + k] * inv);
  }
}

}  // namespace internal

KernelIsa DetectKernelIsa() {
  static const KernelIsa isa = [] {
    if (IsaAvailable(KernelIsa::kAvx512Vnni)) return KernelIsa::kAvx512Vnni;
    if (IsaAvailable(KernelIsa::kAvx512)) return KernelIsa::kAvx512;
    if (IsaAvailable(KernelIsa::kAvx2)) return KernelIsa::kAvx2;
    return KernelIsa::kScalar;
  }();
  return isa;
}

absl::string_view KernelIsaName(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kAvx512:
      return "avx512";
    case KernelIsa::kAvx512Vnni:
      return "avx512vnni";
    case KernelIsa::kAvx2:
      return "avx2";
    case KernelIsa::kScalar:
      break;
  }
  return "scalar";
}

absl::string_view ActivationPrecisionName(ActivationPrecision p) {
  return p == ActivationPrecision::kInt8 ? "int8" : "int16";
}

absl::StatusOr<ActivationPrecision> ParseActivationPrecision(absl::string_view name) {
  if (name == "int16") return ActivationPrecision::kInt16;
  if (name == "int8") return ActivationPrecision::kInt8;
  return absl::InvalidArgumentError(
      absl::StrCat("activation precision '", name, "' is not one of int16, int8"));
}

namespace {

bool IsFloatType(TensorType type) {
  return type == TensorType::kF32 || type == TensorType::kF16 || type == TensorType::kBF16;
}

}  // namespace

void MatMulWithIsa(KernelIsa isa, const WeightMatrix& w, const float* x, int64_t n, float* y,
                   ThreadPool& pool, MatMulScratch* scratch) {
  if (!IsaAvailable(isa)) isa = KernelIsa::kScalar;
  const PanelPath path = PanelPathFor(isa, w);
  if (path == PanelPath::kVnni || path == PanelPath::kInt16) {
    const MatMulOutput output{&w, y};
    return MatMulPanels(path, absl::MakeConstSpan(&output, 1), x, n, pool, scratch);
  }
  if (w.activations == ActivationPrecision::kInt8 && !IsFloatType(w.type)) {
    thread_local MatMulScratch thread_scratch;
    MatMulScratch& b = scratch != nullptr ? *scratch : thread_scratch;
    if (static_cast<int64_t>(b.rounded.size()) < n * w.cols) b.rounded.resize(n * w.cols);
    internal::RoundToActivationGrid(w.activations, x, n, w.cols, b.rounded.data());
    x = b.rounded.data();
  }
  if (path != PanelPath::kNone) {
    const MatMulOutput output{&w, y};
    return MatMulPanels(path, absl::MakeConstSpan(&output, 1), x, n, pool, scratch);
  }
  const DotTileFn dot = DotTileFor(isa);
  // Types the row kernels do not decode themselves (the K-quants, Q4_1, ...) are decoded to
  // floats a block of rows at a time (exactly, with the scalar reference dequantisation) and
  // multiplied as F32: the same operations for a row whatever the batch or thread.
  const bool decode = !internal::DotTileDecodes(w.type);
  // AVX-512 takes plain rows 16 at a time (the same results, horizontal sums shared).
  const bool rows16 =
      (isa == KernelIsa::kAvx512 || isa == KernelIsa::kAvx512Vnni) &&
      (w.type == TensorType::kF32 || w.type == TensorType::kF16 || w.type == TensorType::kBF16);
  // Threads split the rows of W; each (x row, W row) pair is computed by exactly one call.
  pool.ParallelFor(
      w.rows,
      [&](int64_t row_begin, int64_t row_end) {
        float out[kMaxTile];
        thread_local std::vector<float> decoded;
        if (decode && static_cast<int64_t>(decoded.size()) < kRowBlock * w.cols) {
          decoded.resize(kRowBlock * w.cols);
        }
        for (int64_t block = row_begin; block < row_end; block += kRowBlock) {
          const int64_t block_end = std::min(row_end, block + kRowBlock);
          if (decode) internal::DecodeRows(w, block, block_end, decoded.data());
          for (int64_t i = 0; i < n; i += kMaxTile) {
            const int tile = static_cast<int>(std::min<int64_t>(kMaxTile, n - i));
            if (rows16) {
              internal::DotPlainRowsAvx512(w.type, w.data + block * w.row_bytes, w.row_bytes,
                                           static_cast<int>(block_end - block), x + i * w.cols,
                                           w.cols, tile, w.cols, y + i * w.rows + block, w.rows);
              continue;
            }
            for (int64_t r = block; r < block_end; ++r) {
              if (decode) {
                const float* row = decoded.data() + (r - block) * w.cols;
                dot(TensorType::kF32, reinterpret_cast<const uint8_t*>(row), x + i * w.cols, w.cols,
                    tile, w.cols, out);
              } else {
                dot(w.type, w.data + r * w.row_bytes, x + i * w.cols, w.cols, tile, w.cols, out);
              }
              for (int t = 0; t < tile; ++t) y[(i + t) * w.rows + r] = out[t];
            }
          }
        }
      },
      w.rows * w.cols * n < kMinParallelWork ? w.rows : kRowBlock);
}

void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool,
            MatMulScratch* scratch) {
  MatMulWithIsa(DetectKernelIsa(), w, x, n, y, pool, scratch);
}

void MatMulShared(absl::Span<const MatMulOutput> outputs, const float* x, int64_t n,
                  ThreadPool& pool, MatMulScratch* scratch) {
  const KernelIsa isa = DetectKernelIsa();
  const PanelPath path = PanelPathFor(isa, *outputs[0].w);
  // The float panels of a quantized type in int8 mode round x first (MatMulWithIsa).
  const bool rounds = path == PanelPath::kFloat && !IsFloatType(outputs[0].w->type) &&
                      outputs[0].w->activations == ActivationPrecision::kInt8;
  bool same = path != PanelPath::kNone && !rounds && outputs.size() <= kMaxSharedOutputs;
  for (const MatMulOutput& o : outputs) {
    same = same && PanelPathFor(isa, *o.w) == path && o.w->cols == outputs[0].w->cols &&
           o.w->activations == outputs[0].w->activations;
  }
  if (same) return MatMulPanels(path, outputs, x, n, pool, scratch);
  for (const MatMulOutput& o : outputs) MatMul(*o.w, x, n, o.y, pool, scratch);
}

void MatMulReference(const WeightMatrix& w, const float* x, int64_t n, float* y) {
  std::vector<float> row(w.cols);
  for (int64_t r = 0; r < w.rows; ++r) {
    const absl::Status status = DequantizeRow(
        w.type, absl::MakeConstSpan(w.data + r * w.row_bytes, w.row_bytes), absl::MakeSpan(row));
    TANDEM_CHECK(status.ok());  // the loader admits only supported types and sizes
    for (int64_t i = 0; i < n; ++i) {
      double sum = 0;
      for (int64_t c = 0; c < w.cols; ++c) sum += double{row[c]} * x[i * w.cols + c];
      y[i * w.rows + r] = static_cast<float>(sum);
    }
  }
}

}  // namespace tandem
