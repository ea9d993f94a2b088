#include "core/decoder/kv_cache.h"

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
  const double rows =
      double(shape.n_layers) * double(shape.n_kv_heads) * double(shape.context_size);
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
    : shape_(shape), type_(type), row_bytes_(shape.head_dim * ElementBytes(type)) {
  const int64_t rows = shape.n_layers * shape.n_kv_heads * shape.context_size;
  k_.assign(rows * row_bytes_, 0);
  v_.assign(rows * row_bytes_, 0);
  if (type == KvType::kI8) {
    k_scale_.assign(rows, 0.0f);
    v_scale_.assign(rows, 0.0f);
  }
  bytes_ = BytesFor(shape, type);
}

void KvCache::Write(std::vector<uint8_t>& data, std::vector<float>& scales, int64_t row,
                    const float* values) {
  uint8_t* dst = data.data() + row * row_bytes_;
  const int64_t n = shape_.head_dim;
  switch (type_) {
    case KvType::kF32:
      std::memcpy(dst, values, n * sizeof(float));
      break;
    case KvType::kF16:
      ConvertF32ToF16(values, reinterpret_cast<uint16_t*>(dst), n);
      break;
    case KvType::kI8: {
      // Symmetric per-row quantization: q = round(x / s), s = max|x| / 127.
      float amax = 0.0f;
      for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(values[i]));
      const float scale = amax / 127.0f;
      const float inv = scale > 0 ? 1.0f / scale : 0.0f;
      for (int64_t i = 0; i < n; ++i) {
        dst[i] = static_cast<uint8_t>(static_cast<int8_t>(std::lrintf(values[i] * inv)));
      }
      scales[row] = scale;
      break;
    }
  }
}

void KvCache::WriteK(int64_t layer, int64_t kv_head, int64_t position, const float* values) {
  Write(k_, k_scale_, RowIndex(layer, kv_head, position), values);
}

void KvCache::WriteV(int64_t layer, int64_t kv_head, int64_t position, const float* values) {
  Write(v_, v_scale_, RowIndex(layer, kv_head, position), values);
}

float KvCache::DotK(int64_t layer, int64_t kv_head, int64_t position, const float* q) const {
  const int64_t row = RowIndex(layer, kv_head, position);
  const uint8_t* src = k_.data() + row * row_bytes_;
  const int64_t n = shape_.head_dim;
  switch (type_) {
    case KvType::kF32:
      return DotF32(q, reinterpret_cast<const float*>(src), n);
    case KvType::kF16:
      return DotF16(q, reinterpret_cast<const uint16_t*>(src), n);
    case KvType::kI8:
      return DotI8(q, reinterpret_cast<const int8_t*>(src), n) * k_scale_[row];
  }
  return 0.0f;
}

void KvCache::AccumulateV(int64_t layer, int64_t kv_head, int64_t position, float weight,
                          float* out) const {
  const int64_t row = RowIndex(layer, kv_head, position);
  const uint8_t* src = v_.data() + row * row_bytes_;
  const int64_t n = shape_.head_dim;
  switch (type_) {
    case KvType::kF32:
      return AxpyF32(weight, reinterpret_cast<const float*>(src), out, n);
    case KvType::kF16:
      return AxpyF16(weight, reinterpret_cast<const uint16_t*>(src), out, n);
    case KvType::kI8:
      return AxpyI8(weight * v_scale_[row], reinterpret_cast<const int8_t*>(src), out, n);
  }
}

void KvCache::ReadK(int64_t layer, int64_t kv_head, int64_t position, float* out) const {
  const int64_t row = RowIndex(layer, kv_head, position);
  const uint8_t* src = k_.data() + row * row_bytes_;
  for (int64_t i = 0; i < shape_.head_dim; ++i) {
    switch (type_) {
      case KvType::kF32:
        std::memcpy(&out[i], src + 4 * i, 4);
        break;
      case KvType::kF16: {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        out[i] = Fp16ToF32(h);
        break;
      }
      case KvType::kI8:
        out[i] = static_cast<float>(static_cast<int8_t>(src[i])) * k_scale_[row];
        break;
    }
  }
}

}  // namespace tandem
