#include "core/kernels/matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/types/span.h"
#include "core/base/check.h"
#include "core/kernels/matmul_internal.h"
#include "core/kernels/packed_matrix.h"

namespace tandem {
namespace {

using internal::DotTileFn;
using internal::kMaxTile;

// Rows of W handled together: they stay in cache while every x tile passes over them.
constexpr int64_t kRowBlock = 16;
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

bool IsaAvailable(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
    case KernelIsa::kAvx512Vnni:
      return IsaAvailable(KernelIsa::kAvx512) && __builtin_cpu_supports("avx512vnni");
    case KernelIsa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("f16c");
    case KernelIsa::kScalar:
      return true;
  }
  return false;
}

// The packed path: threads split whole panels; the kernel applies each panel to up to
// kMaxPanelGroup x rows per pass, so the panel streams from memory once for typical batches
// and stays in cache for the further passes of a long prefill chunk.
void MatMulPanels(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool) {
  const int64_t panels = PanelCount(w.rows);
  pool.ParallelFor(
      panels,
      [&](int64_t begin, int64_t end) {
        for (int64_t p = begin; p < end; ++p) {
          for (int64_t i = 0; i < n; i += internal::kMaxPanelGroup) {
            const int64_t group = std::min<int64_t>(internal::kMaxPanelGroup, n - i);
            internal::PanelGroupAvx512(w, p, x + i * w.cols, static_cast<int>(group),
                                       y + i * w.rows);
          }
        }
      },
      w.rows * w.cols * n < kMinParallelWork ? panels : 1);
}

// The VNNI path for Q8_0 panels: the activations are quantized once (into buffers the calling
// thread keeps, so decode steps allocate nothing), then threads split pairs of panels.
void MatMulPanelsVnni(const WeightMatrix& w, const float* x, int64_t n, float* y,
                      ThreadPool& pool) {
  thread_local std::vector<int16_t> q_buffer;
  thread_local std::vector<float> scale_buffer;
  if (static_cast<int64_t>(q_buffer.size()) < n * w.cols) q_buffer.resize(n * w.cols);
  if (static_cast<int64_t>(scale_buffer.size()) < n * w.cols / 32) {
    scale_buffer.resize(n * w.cols / 32);
  }
  const int16_t* xq = q_buffer.data();  // this thread's buffers, read by the pool's threads
  const float* xs = scale_buffer.data();
  internal::QuantizeRowsInt16(x, n, w.cols, q_buffer.data(), scale_buffer.data());
  const int64_t panels = PanelCount(w.rows);
  const int64_t pairs = (panels + 1) / 2;
  pool.ParallelFor(
      pairs,
      [&](int64_t begin, int64_t end) {
        for (int64_t pair = begin; pair < end; ++pair) {
          const int64_t first = 2 * pair;
          const int count = static_cast<int>(std::min<int64_t>(2, panels - first));
          for (int64_t i = 0; i < n; i += internal::kMaxPanelGroup) {
            const int64_t group = std::min<int64_t>(internal::kMaxPanelGroup, n - i);
            internal::PanelsVnni(w, first, count, xq + i * w.cols, xs + i * w.cols / 32,
                                 static_cast<int>(group), y + i * w.rows);
          }
        }
      },
      w.rows * w.cols * n < kMinParallelWork ? pairs : 1);
}

}  // namespace

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

void MatMulWithIsa(KernelIsa isa, const WeightMatrix& w, const float* x, int64_t n, float* y,
                   ThreadPool& pool) {
  if (!IsaAvailable(isa)) isa = KernelIsa::kScalar;
  if (w.packed != nullptr) {
    if (isa == KernelIsa::kAvx512Vnni && w.type == TensorType::kQ8_0) {
      return MatMulPanelsVnni(w, x, n, y, pool);
    }
    if (isa == KernelIsa::kAvx512 || isa == KernelIsa::kAvx512Vnni) {
      return MatMulPanels(w, x, n, y, pool);
    }
  }
  const DotTileFn dot = DotTileFor(isa);
  // Threads split the rows of W; each (x row, W row) pair is computed by exactly one call.
  pool.ParallelFor(
      w.rows,
      [&](int64_t row_begin, int64_t row_end) {
        float out[kMaxTile];
        for (int64_t block = row_begin; block < row_end; block += kRowBlock) {
          const int64_t block_end = std::min(row_end, block + kRowBlock);
          for (int64_t i = 0; i < n; i += kMaxTile) {
            const int tile = static_cast<int>(std::min<int64_t>(kMaxTile, n - i));
            for (int64_t r = block; r < block_end; ++r) {
              dot(w.type, w.data + r * w.row_bytes, x + i * w.cols, w.cols, tile, w.cols, out);
              for (int t = 0; t < tile; ++t) y[(i + t) * w.rows + r] = out[t];
            }
          }
        }
      },
      w.rows * w.cols * n < kMinParallelWork ? w.rows : kRowBlock);
}

void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool) {
  MatMulWithIsa(DetectKernelIsa(), w, x, n, y, pool);
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
