#include "core/kernels/packed_matrix.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/kernels/packed_kquant.h"

namespace tandem {
namespace {

constexpr int64_t kBlock = 32;                   // Q8_0 / Q4_0 elements per block
constexpr int64_t kScaleBytes = 2 * kPanelRows;  // 16 f16 scales

// Where byte k of a row's block (after its scale) goes in the packed block's quants, for row
// `lane` of the panel: the int16 layout puts byte pair k / 2, then the row, then the byte's
// parity (a 32-byte load holds 16 rows' pairs of bytes 2j, 2j + 1); the int8 layout
// (UsesInt8Panels) byte quad k / 4, then the row, then k % 4 (a 64-byte load: 16 rows' quads).
int64_t QuantSlot(int64_t k, int64_t lane, bool int8_panels) {
  const int64_t group = int8_panels ? 4 : 2;
  return (k / group) * group * kPanelRows + group * lane + k % group;
}

// Packs the quantized blocks of panel `p` into `out` (zeroed by the caller: padding rows keep
// scale 0 and quants 0, so they contribute exact zeros). `quant_bytes` is 32 for Q8_0 (one
// int8 per element) and 16 for Q4_0 (two nibbles per byte, kept as stored). The int8 layout
// stores Q8_0's quants unsigned, q + 128 = q XOR 0x80 (vpdpbusd's unsigned operand).
void PackQuantPanel(const WeightMatrix& w, int64_t p, int64_t quant_bytes, uint8_t* out) {
  const int64_t block_bytes = 2 + quant_bytes;
  const int64_t packed_block_bytes = kScaleBytes + quant_bytes * kPanelRows;
  const uint8_t flip = w.int8_panels && quant_bytes == 32 ? 0x80 : 0;
  for (int64_t lane = 0; lane < kPanelRows; ++lane) {
    const int64_t r = p * kPanelRows + lane;
    if (r >= w.rows) break;
    const uint8_t* row = w.data + r * w.row_bytes;
    for (int64_t b = 0; b < w.cols / kBlock; ++b) {
      const uint8_t* src = row + b * block_bytes;
      uint8_t* dst = out + b * packed_block_bytes;
      std::memcpy(dst + 2 * lane, src, 2);  // the f16 scale
      for (int64_t k = 0; k < quant_bytes; ++k) {
        dst[kScaleBytes + QuantSlot(k, lane, w.int8_panels)] = src[2 + k] ^ flip;
      }
    }
  }
}

// F16 / BF16: column c of the panel is 16 two-byte values.
void PackHalfPanel(const WeightMatrix& w, int64_t p, uint8_t* out) {
  for (int64_t lane = 0; lane < kPanelRows; ++lane) {
    const int64_t r = p * kPanelRows + lane;
    if (r >= w.rows) break;
    const uint8_t* row = w.data + r * w.row_bytes;
    for (int64_t c = 0; c < w.cols; ++c)
      std::memcpy(out + (c * kPanelRows + lane) * 2, row + 2 * c, 2);
  }
}

}  // namespace

bool HasPanelLayout(TensorType type) {
  return type == TensorType::kQ8_0 || type == TensorType::kQ4_0 || type == TensorType::kF16 ||
         type == TensorType::kBF16 || internal::IsKQuantPanelType(type);
}

int64_t PanelBytes(TensorType type, int64_t cols) {
  if (internal::IsKQuantPanelType(type)) {
    return cols / GetTraits(type).block_size * GetTraits(type).bytes_per_block * kPanelRows;
  }
  switch (type) {
    case TensorType::kQ8_0:
      return cols / kBlock * (kScaleBytes + 32 * kPanelRows);
    case TensorType::kQ4_0:
      return cols / kBlock * (kScaleBytes + 16 * kPanelRows);
    case TensorType::kF16:
    case TensorType::kBF16:
      return cols * 2 * kPanelRows;
    default:
      TANDEM_CHECK(false);  // callers check HasPanelLayout
      return 0;
  }
}

int64_t PackedBytes(const WeightMatrix& w) {
  return PanelCount(w.rows) * PanelBytes(w.type, w.cols);
}

void PackMatrix(const WeightMatrix& w, uint8_t* out) {
  TANDEM_CHECK(HasPanelLayout(w.type));
  const int64_t panel_bytes = PanelBytes(w.type, w.cols);
  std::memset(out, 0, PackedBytes(w));
  for (int64_t p = 0; p < PanelCount(w.rows); ++p) {
    uint8_t* panel = out + p * panel_bytes;
    if (internal::IsKQuantPanelType(w.type)) {
      internal::PackKQuantPanel(w, p, out);
      continue;
    }
    switch (w.type) {
      case TensorType::kQ8_0:
      case TensorType::kQ4_0:
        PackQuantPanel(w, p, w.type == TensorType::kQ8_0 ? 32 : 16, panel);
        break;
      default:
        PackHalfPanel(w, p, panel);
        break;
    }
  }
}

bool PacksOnThisCpu(TensorType type) {
  const KernelIsa isa = DetectKernelIsa();
  return (isa == KernelIsa::kAvx512 || isa == KernelIsa::kAvx512Vnni) && HasPanelLayout(type);
}

bool UsesInt8Panels(const WeightMatrix& w) {
  return w.activations == ActivationPrecision::kInt8 &&
         DetectKernelIsa() == KernelIsa::kAvx512Vnni &&
         (w.type == TensorType::kQ8_0 || w.type == TensorType::kQ4_0 ||
          internal::IsKQuantPanelType(w.type));
}

// x86-64's transparent huge page.
constexpr uintptr_t kHugePageBytes = uintptr_t{2} << 20;

absl::StatusOr<PackedArena> PackedArena::Create(int64_t bytes) {
  PackedArena arena;
  if (bytes <= 0) return arena;
  // Mapped with a huge page's slack and trimmed to start on a huge page boundary: the
  // kernels read a panel's super-blocks a matrix's rows · 144 bytes apart, one 4 KiB page each,
  // so where the arena's first or last 2 MiB could not be huge (the kernel aligns only some
  // mappings) each such read missed the TLB. A 1024 x 2048 Q4_K arena of 1.2 MiB ran its
  // 64-row int8 pass at 140 or 210-260 ns a panel block, by where ASLR put it (1 run in 3
  // slow); aligned, always at 140.
  const int64_t mapped = bytes + kHugePageBytes;
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot map ", bytes, " bytes for packed weights: ", std::strerror(errno)));
  }
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (start + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  const uintptr_t end = start + mapped;
  if (aligned > start) munmap(p, aligned - start);
  if (end > aligned + bytes) munmap(reinterpret_cast<void*>(aligned + bytes), end - aligned - bytes);
  p = reinterpret_cast<void*>(aligned);
  // Only a hint: without huge pages the kernels are as correct, just slower.
  madvise(p, bytes, MADV_HUGEPAGE);
  arena.data_ = static_cast<uint8_t*>(p);
  arena.size_ = bytes;
  return arena;
}

PackedArena::PackedArena(PackedArena&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

PackedArena& PackedArena::operator=(PackedArena&& other) noexcept {
  if (this != &other) {
    this->~PackedArena();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

PackedArena::~PackedArena() {
  if (data_ != nullptr) munmap(data_, size_);
}

}  // namespace tandem
