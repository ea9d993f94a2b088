// The key/value cache of one session: for every layer and KV head, one row of head_dim
// values per position. Rows are stored as f32, f16 or i8 (with one f32 scale per row).
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

  // Stores the head_dim values of `kv_head` at `position` in layer `layer`.
  void WriteK(int64_t layer, int64_t kv_head, int64_t position, const float* values);
  void WriteV(int64_t layer, int64_t kv_head, int64_t position, const float* values);

  // dot(q, K[layer, kv_head, position]) over head_dim, in element order.
  float DotK(int64_t layer, int64_t kv_head, int64_t position, const float* q) const;
  // out += weight * V[layer, kv_head, position], element by element.
  void AccumulateV(int64_t layer, int64_t kv_head, int64_t position, float weight,
                   float* out) const;
  // The stored row as floats (for tests).
  void ReadK(int64_t layer, int64_t kv_head, int64_t position, float* out) const;

 private:
  KvCache(const KvCacheShape& shape, KvType type);
  int64_t RowIndex(int64_t layer, int64_t kv_head, int64_t position) const {
    return (layer * shape_.n_kv_heads + kv_head) * shape_.context_size + position;
  }
  void Write(std::vector<uint8_t>& data, std::vector<float>& scales, int64_t row,
             const float* values);

  KvCacheShape shape_;
  KvType type_;
  int64_t row_bytes_;
  int64_t bytes_ = 0;
  int64_t length_ = 0;
  // [n_layers, n_kv_heads, context_size, head_dim] in `type_`.
  std::vector<uint8_t> k_, v_;
  // i8 only: [n_layers, n_kv_heads, context_size] scales.
  std::vector<float> k_scale_, v_scale_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_DECODER_KV_CACHE_H_
