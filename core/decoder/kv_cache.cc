#include "core/decoder/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/kernels/vector_ops.h"
#include "core/model/tensor_type.h"

namespace tandem {
namespace {

int64_t ElementBytes(KvType type) {
  switch (type) {
    case KvType::kF32:
      return 4;
    case KvType::kF16:
      return 2;
    case KvType::kI8:
      return 1;
  }
  return 4;
}

}  // namespace

absl::string_view KvTypeName(KvType type) {
  switch (type) {
    case KvType::kF32:
      return "f32";
    case KvType::kF16:
      return "f16";
    case KvType::kI8:
      return "i8";
  }
  return "f32";
}

absl::StatusOr<KvType> ParseKvType(absl::string_view name) {
  if (name == "f32") return KvType::kF32;
  if (name == "f16") return KvType::kF16;
  if (name == "i8") return KvType::kI8;
  return absl::InvalidArgumentError(
      absl::StrCat("KV cache type '", name, "' is not one of f32, f16, i8"));
}

int64_t KvCache::BytesFor(const KvCacheShape& shape, KvType type) {
  const double padded = std::ceil(double(shape.context_size) / kKeyBlock) * kKeyBlock;
  const double rows = double(shape.n_layers) * double(shape.n_kv_heads) * padded;
  const double per_row =
      double(shape.head_dim) * ElementBytes(type) + (type == KvType::kI8 ? sizeof(float) : 0);
  const double total = 2 * rows * per_row;  // K and V
  return total > double(std::numeric_limits<int64_t>::max() / 2)
             ? std::numeric_limits<int64_t>::max()
             : static_cast<int64_t>(total);
}

absl::StatusOr<std::unique_ptr<KvCache>> KvCache::Create(const KvCacheShape& shape, KvType type) {
  if (shape.n_layers <= 0 || shape.n_kv_heads <= 0 || shape.head_dim <= 0 ||
      shape.context_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "KV cache shape must be positive: layers ", shape.n_layers, ", kv heads ", shape.n_kv_heads,
        ", head_dim ", shape.head_dim, ", context ", shape.context_size));
  }
  // Refuse anything beyond 1 TiB outright: it is a typo or a hostile request, not a cache.
  if (BytesFor(shape, type) > (int64_t{1} << 40)) {
    return absl::ResourceExhaustedError(absl::StrCat("KV cache of ", shape.context_size,
                                                     " positions would need ",
                                                     BytesFor(shape, type), " bytes"));
  }
  return std::unique_ptr<KvCache>(new KvCache(shape, type));
}

KvCache::KvCache(const KvCacheShape& shape, KvType type)
    : shape_(shape),
      type_(type),
      padded_context_((shape.context_size + kKeyBlock - 1) / kKeyBlock * kKeyBlock) {
  const int64_t rows = shape.n_layers * shape.n_kv_heads * padded_context_;
  k_.assign(rows * shape.head_dim * ElementBytes(type), 0);
  v_.assign(rows * shape.head_dim * ElementBytes(type), 0);
  if (type == KvType::kI8) {
    k_scale_.assign(rows, 0.0f);
    v_scale_.assign(rows, 0.0f);
  }
  bytes_ = BytesFor(shape, type);
}

float KvCache::Store(const float* values, uint8_t* data, int64_t first, int64_t stride) const {
  const int64_t n = shape_.head_dim;
  switch (type_) {
    case KvType::kF32: {
      float* dst = reinterpret_cast<float*>(data);
      for (int64_t i = 0; i < n; ++i) dst[first + i * stride] = values[i];
      return 1.0f;
    }
    case KvType::kF16: {
      uint16_t* dst = reinterpret_cast<uint16_t*>(data);
      uint16_t half[64];  // converted a vector at a time, then placed
      for (int64_t i0 = 0; i0 < n; i0 += 64) {
        const int64_t count = std::min<int64_t>(64, n - i0);
        ConvertF32ToF16(values + i0, half, count);
        for (int64_t i = 0; i < count; ++i) dst[first + (i0 + i) * stride] = half[i];
      }
      return 1.0f;
    }
    case KvType::kI8: {
      // Symmetric per-row quantization: q = round(x / s), s = max|x| / 127.
      float amax = 0.0f;
      for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(values[i]));
      const float scale = amax / 127.0f;
      const float inv = scale > 0 ? 1.0f / scale : 0.0f;
      int8_t* dst = reinterpret_cast<int8_t*>(data);
      for (int64_t i = 0; i < n; ++i) {
        dst[first + i * stride] = static_cast<int8_t>(std::lrintf(values[i] * inv));
      }
      return scale;
    }
  }
  return 1.0f;
}

float KvCache::Load(const uint8_t* data, int64_t element) const {
  switch (type_) {
    case KvType::kF32:
      return reinterpret_cast<const float*>(data)[element];
    case KvType::kF16:
      return Fp16ToF32(reinterpret_cast<const uint16_t*>(data)[element]);
    case KvType::kI8:
      return static_cast<float>(reinterpret_cast<const int8_t*>(data)[element]);
  }
  return 0.0f;
}

void KvCache::WriteK(int64_t layer, int64_t kv_head, int64_t position, const float* values) {
  const int64_t base = HeadBase(layer, kv_head);
  const float scale = Store(values, k_.data(), KeyElement(base, position, 0), kKeyBlock);
  if (type_ == KvType::kI8) k_scale_[base + position] = scale;
}

void KvCache::WriteV(int64_t layer, int64_t kv_head, int64_t position, const float* values) {
  const int64_t row = HeadBase(layer, kv_head) + position;
  const float scale = Store(values, v_.data(), row * shape_.head_dim, 1);
  if (type_ == KvType::kI8) v_scale_[row] = scale;
}

void KvCache::KeyScores(int64_t layer, int64_t kv_head, const float* q, int64_t q_stride, int n_q,
                        int64_t positions, float scale, float* scores,
                        int64_t scores_stride) const {
  const int64_t base = HeadBase(layer, kv_head);
  const int64_t dim = shape_.head_dim;
  float partial[4 * kKeyBlock];  // a last, partial block for up to 4 queries at a time
  for (int j0 = 0; j0 < n_q; j0 += 4) {
    const int group = std::min(4, n_q - j0);
    const float* qj = q + j0 * q_stride;
    float* sj = scores + j0 * scores_stride;
    for (int64_t first = 0; first < positions; first += kKeyBlock) {
      const int64_t count = std::min(kKeyBlock, positions - first);
      const bool whole = count == kKeyBlock;
      float* out = whole ? sj + first : partial;
      const int64_t out_stride = whole ? scores_stride : kKeyBlock;
      const int64_t element = KeyElement(base, first, 0);
      switch (type_) {
        case KvType::kF32:
          KeyBlockScoresF32(qj, q_stride, group,
                            reinterpret_cast<const float*>(k_.data()) + element, dim, scale, out,
                            out_stride);
          break;
        case KvType::kF16:
          KeyBlockScoresF16(qj, q_stride, group,
                            reinterpret_cast<const uint16_t*>(k_.data()) + element, dim, scale, out,
                            out_stride);
          break;
        case KvType::kI8:
          KeyBlockScoresI8(qj, q_stride, group, k_scale_.data() + base + first,
                           reinterpret_cast<const int8_t*>(k_.data()) + element, dim, scale, out,
                           out_stride);
          break;
      }
      if (!whole) {
        for (int j = 0; j < group; ++j) {
          std::copy(out + j * kKeyBlock, out + j * kKeyBlock + count,
                    sj + j * scores_stride + first);
        }
      }
    }
  }
}

void KvCache::ValueSum(int64_t layer, int64_t kv_head, const float* weights, int64_t weights_stride,
                       int n_q, int64_t positions, float* out, int64_t out_stride) const {
  const int64_t base = HeadBase(layer, kv_head);
  const int64_t dim = shape_.head_dim;
  const int64_t element = base * dim;
  switch (type_) {
    case KvType::kF32:
      return WeightedSumF32(weights, weights_stride, n_q,
                            reinterpret_cast<const float*>(v_.data()) + element, positions, dim,
                            out, out_stride);
    case KvType::kF16:
      return WeightedSumF16(weights, weights_stride, n_q,
                            reinterpret_cast<const uint16_t*>(v_.data()) + element, positions, dim,
                            out, out_stride);
    case KvType::kI8:
      return WeightedSumI8(weights, weights_stride, n_q, v_scale_.data() + base,
                           reinterpret_cast<const int8_t*>(v_.data()) + element, positions, dim,
                           out, out_stride);
  }
}

void KvCache::ReadK(int64_t layer, int64_t kv_head, int64_t position, float* out) const {
  const int64_t base = HeadBase(layer, kv_head);
  const float scale = type_ == KvType::kI8 ? k_scale_[base + position] : 1.0f;
  for (int64_t i = 0; i < shape_.head_dim; ++i) {
    out[i] = Load(k_.data(), KeyElement(base, position, i)) * scale;
  }
}

void KvCache::ReadV(int64_t layer, int64_t kv_head, int64_t position, float* out) const {
  const int64_t row = HeadBase(layer, kv_head) + position;
  const float scale = type_ == KvType::kI8 ? v_scale_[row] : 1.0f;
  for (int64_t i = 0; i < shape_.head_dim; ++i) {
    out[i] = Load(v_.data(), row * shape_.head_dim + i) * scale;
  }
}

}  // namespace tandem
