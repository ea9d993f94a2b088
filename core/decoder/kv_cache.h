// The key/value cache of one session: for every layer and KV head, head_dim values per
// position for the keys and for the values, stored as f32, f16 or i8 (with one f32 scale
// per position's row).
//
// Layout, per (layer, KV head): values row by row; keys transposed in blocks of 16
// positions ([head_dim][16], vector_ops.h), so a query scores 16 positions per vector
// operation. Positions are allocated in whole blocks (the context rounded up to 16).
//
// Memory is allocated once at creation for the whole context and reported by bytes().
// Truncate() only moves the length: positions past it are overwritten by the next tokens.
//
// Thread-safety: not thread-safe; a session's cache is used by one thread at a time. Writes
// of different (layer, position) rows from different threads are fine.
#ifndef TANDEM_CORE_DECODER_KV_CACHE_H_
#define TANDEM_CORE_DECODER_KV_CACHE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/kernels/vector_ops.h"

namespace tandem {

enum class KvType { kF32, kF16, kI8 };
absl::string_view KvTypeName(KvType type);
// "f32", "f16" or "i8"; anything else is kInvalidArgument naming the value.
absl::StatusOr<KvType> ParseKvType(absl::string_view name);

struct KvCacheShape {
  int64_t n_layers = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t context_size = 0;  // positions
};

class KvCache {
 public:
  // kInvalidArgument for a non-positive dimension; kResourceExhausted if the size overflows.
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(const KvCacheShape& shape, KvType type);

  // Bytes a cache of this shape and type takes (for budgets, before creating it).
  static int64_t BytesFor(const KvCacheShape& shape, KvType type);

  const KvCacheShape& shape() const { return shape_; }
  KvType type() const { return type_; }
  int64_t bytes() const { return bytes_; }

  // Positions filled so far; the next token runs at position length().
  int64_t length() const { return length_; }
  // Forgets positions >= new_length (new_length <= length(); checked by the caller).
  void Truncate(int64_t new_length) { length_ = new_length; }
  void SetLength(int64_t length) { length_ = length; }
  // New blocks Reserve(positions) would take now.
  int64_t BlocksNeeded(int64_t) const { return 0; }
  // Ensures memory for positions [0, positions); kOutOfRange past the context.
  absl::Status Reserve(int64_t positions) const {
    return positions <= shape_.context_size
               ? absl::OkStatus()
               : absl::OutOfRangeError("KV cache: positions beyond the context");
  }

  // Stores the head_dim values of `kv_head` at `position` in layer `layer`.
  void WriteK(int64_t layer, int64_t kv_head, int64_t position, const float* values);
  void WriteV(int64_t layer, int64_t kv_head, int64_t position, const float* values);

  // For n_q queries j (at q + j · q_stride; the query heads sharing this KV head):
  //   scores[j · scores_stride + p] = scale · (q_j · K[layer, kv_head, p])    p < positions
  // A query's scores do not depend on n_q (KeyBlockScores*).
  void KeyScores(int64_t layer, int64_t kv_head, const float* q, int64_t q_stride, int n_q,
                 int64_t positions, float scale, float* scores, int64_t scores_stride) const;
  // For n_q weight vectors j (at weights + j · weights_stride):
  //   out[j · out_stride + d] = Σ_p weights_j[p] · V[layer, kv_head, p][d]      p < positions
  // (WeightedSum*).
  void ValueSum(int64_t layer, int64_t kv_head, const float* weights, int64_t weights_stride,
                int n_q, int64_t positions, float* out, int64_t out_stride) const;
  // The stored rows as floats (for tests).
  void ReadK(int64_t layer, int64_t kv_head, int64_t position, float* out) const;
  void ReadV(int64_t layer, int64_t kv_head, int64_t position, float* out) const;

 private:
  KvCache(const KvCacheShape& shape, KvType type);
  // First position of (layer, kv_head): rows of both K and V are indexed from here.
  int64_t HeadBase(int64_t layer, int64_t kv_head) const {
    return (layer * shape_.n_kv_heads + kv_head) * padded_context_;
  }
  // Element offset of element k of key position p (p relative to its head's base).
  int64_t KeyElement(int64_t base, int64_t p, int64_t k) const {
    const int64_t block = p / kKeyBlock;
    return (base + block * kKeyBlock) * shape_.head_dim + k * kKeyBlock + p % kKeyBlock;
  }
  // Quantizes (i8) or converts `values` into elements dst[i · stride]; returns the row scale
  // (1 for f32 / f16).
  float Store(const float* values, uint8_t* data, int64_t first, int64_t stride) const;
  float Load(const uint8_t* data, int64_t element) const;

  KvCacheShape shape_;
  KvType type_;
  int64_t padded_context_;  // context_size rounded up to a whole key block
  int64_t bytes_ = 0;
  int64_t length_ = 0;
  // Per (layer, kv head), padded_context_ positions of head_dim elements in `type_`:
  // k_ in transposed blocks, v_ row by row.
  std::vector<uint8_t> k_, v_;
  // i8 only: one scale per (layer, kv head, position), at HeadBase + position.
  std::vector<float> k_scale_, v_scale_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_DECODER_KV_CACHE_H_
