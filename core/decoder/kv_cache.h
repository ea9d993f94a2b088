// The key/value cache of one session: for every layer and KV head, head_dim values per
// position for the keys and for the values, stored as f32, f16 or i8 (with one f32 scale
// per position's row).
//
// Memory is a table of blocks of kKeyBlock (16) positions drawn from a KvBlockPool. Within a
// block, per (layer, KV head): keys transposed ([head_dim][16], vector_ops.h), so a query
// scores 16 positions per vector operation; values row by row ([16][head_dim]).
//
// Two kinds:
//   - Create: a private pool holding exactly ceil(context / 16) blocks, all taken at
//     creation and kept for the cache's life (Truncate and Release only move the length;
//     Reserve always succeeds; prefixes are neither published nor adopted).
//   - CreatePaged: blocks come from a shared pool on demand (Reserve) and go back on
//     Truncate / Release. Full blocks may be published (PublishFullBlocks) and adopted by
//     other caches with the same token prefix (AdoptCachedPrefix); a published block is
//     read-only, and writing into one is preceded by a private copy (Reserve).
//
// Thread-safety: not thread-safe; a session's cache is used by one thread at a time. Writes
// of different (layer, position) rows from different threads are fine, as are concurrent
// KeyScores / ValueSum; Reserve / Truncate / Adopt / Publish / Release are not concurrent
// with anything else on the same cache.
#ifndef TANDEM_CORE_DECODER_KV_CACHE_H_
#define TANDEM_CORE_DECODER_KV_CACHE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/decoder/kv_block_pool.h"
#include "core/kernels/vector_ops.h"

namespace tandem {

// enum class KvType { kF32, kF16, kI8 } is in kv_block_pool.h.
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
  // A private pool holding exactly ceil(context / 16) blocks, all taken now.
  // kInvalidArgument for a non-positive dimension; kResourceExhausted if the size overflows.
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(const KvCacheShape& shape, KvType type);
  // A cache of up to `context_size` positions whose blocks come from `pool` on demand (none
  // at creation). `pool` must outlive the cache. kInvalidArgument for a non-positive
  // context; kResourceExhausted if the context would exceed 1 TiB.
  static absl::StatusOr<std::unique_ptr<KvCache>> CreatePaged(KvBlockPool& pool,
                                                              int64_t context_size);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // Bytes a cache of this shape and type takes (for budgets, before creating it).
  static int64_t BytesFor(const KvCacheShape& shape, KvType type);

  const KvCacheShape& shape() const { return shape_; }
  KvType type() const { return type_; }
  // Create: BytesFor(shape, type). Paged: the blocks held now (block_bytes × blocks_held()).
  int64_t bytes() const;

  // Positions filled so far; the next token runs at position length().
  int64_t length() const { return length_; }
  // Forgets positions >= new_length (new_length <= length(); checked by the caller); a paged
  // cache also drops its references to the blocks wholly at or past new_length.
  void Truncate(int64_t new_length);
  void SetLength(int64_t length);

  // Ensures blocks for positions [0, positions) (positions <= context_size) such that writes
  // at [length(), positions) are private to this cache: a shared or published block holding
  // positions >= length() is first replaced by a private copy (copy-on-write).
  // kResourceExhausted (naming the positions, the blocks needed and the pool's size) when the
  // pool cannot supply them, and then nothing changes; kOutOfRange past context_size.
  // Idempotent. Always OK (nothing to do) for a Create'd cache within its context.
  absl::Status Reserve(int64_t positions);
  // New blocks Reserve(positions) would take now (copies included); 0 for a Create'd cache.
  int64_t BlocksNeeded(int64_t positions) const;
  // Drops every block (paged; a Create'd cache keeps its own); length 0.
  void Release();
  int64_t blocks_held() const { return static_cast<int64_t>(slots_.size()); }

  // Shared prefixes (paged caches; a Create'd cache adopts and publishes nothing).
  // `tokens` are the ids at positions [0, tokens.size()) of this session.
  //
  // Adopts the published full blocks matching `tokens` from block length() / 16 on (length()
  // a multiple of 16, else nothing), stopping at the first miss, at the context's end or at
  // the last full block that leaves at least one token after it (the block holding the final
  // token is never adopted: the caller still needs its logits). Returns the positions adopted
  // by this call; length() grows by as many.
  int64_t AdoptCachedPrefix(absl::Span<const int32_t> tokens);
  // Publishes every full block of [0, length()) not yet published (tokens as above, size >=
  // length(); blocks past tokens.size() are left alone). A block whose hash another block
  // already holds stays private.
  void PublishFullBlocks(absl::Span<const int32_t> tokens);
  // The chain hash of the full block starting at `position` (a multiple of 16) for `tokens`
  // (size >= position + 16, else 0), chaining from this cache's own hashes of its earlier
  // full blocks where it has them.
  uint64_t BlockHashAt(absl::Span<const int32_t> tokens, int64_t position) const;

  // Stores the head_dim values of `kv_head` at `position` in layer `layer`. The position's
  // block must be held and private (Reserve first; asserted in debug builds).
  void WriteK(int64_t layer, int64_t kv_head, int64_t position, const float* values);
  void WriteV(int64_t layer, int64_t kv_head, int64_t position, const float* values);

  // For n_q queries j (at q + j · q_stride; the query heads sharing this KV head):
  //   scores[j · scores_stride + p] = scale · (q_j · K[layer, kv_head, p])    p < positions
  // A query's scores do not depend on n_q (KeyBlockScores*).
  void KeyScores(int64_t layer, int64_t kv_head, const float* q, int64_t q_stride, int n_q,
                 int64_t positions, float scale, float* scores, int64_t scores_stride) const;
  // For n_q weight vectors j (at weights + j · weights_stride):
  //   out[j · out_stride + d] = Σ_p weights_j[p] · V[layer, kv_head, p][d]      p < positions
  // (WeightedSumBlocks*, bit-identical to WeightedSum* over contiguous rows).
  void ValueSum(int64_t layer, int64_t kv_head, const float* weights, int64_t weights_stride,
                int n_q, int64_t positions, float* out, int64_t out_stride) const;
  // The stored rows as floats (for tests).
  void ReadK(int64_t layer, int64_t kv_head, int64_t position, float* out) const;
  void ReadV(int64_t layer, int64_t kv_head, int64_t position, float* out) const;

 private:
  // One held block of 16 positions.
  struct Slot {
    int32_t id = -1;
    uint8_t* data = nullptr;
    uint64_t hash = 0;     // chain hash of its tokens, when `hashed`
    bool hashed = false;   // full, and its hash known (published, adopted or computed)
    bool writable = true;  // private to this cache and unpublished
  };
  KvCache(KvBlockPool& pool, int64_t context_size, std::unique_ptr<KvBlockPool> own_pool);

  // Byte offsets within a block of (layer, kv head)'s keys, values and i8 scales.
  int64_t Head(int64_t layer, int64_t kv_head) const { return layer * shape_.n_kv_heads + kv_head; }
  const uint8_t* KeyRegion(int64_t block, int64_t head) const {
    return slots_[block].data + head * region_bytes_;
  }
  const uint8_t* ValueRegion(int64_t block, int64_t head) const {
    return slots_[block].data + (n_heads_ + head) * region_bytes_;
  }
  const float* KeyScales(int64_t block, int64_t head) const {
    return reinterpret_cast<const float*>(slots_[block].data + 2 * n_heads_ * region_bytes_) +
           head * kKeyBlock;
  }
  const float* ValueScales(int64_t block, int64_t head) const {
    return KeyScales(block, head) + n_heads_ * kKeyBlock;
  }
  // The block holding `position`, which a write is about to change.
  uint8_t* WritableBlock(int64_t position) const;
  // Quantizes (i8) or converts `values` into elements dst[i · stride]; returns the row scale
  // (1 for f32 / f16).
  float Store(const float* values, uint8_t* data, int64_t first, int64_t stride) const;
  float Load(const uint8_t* data, int64_t element) const;
  // Forgets the hashes of blocks not wholly below `length` (their tokens may change).
  void ForgetHashesFrom(int64_t length);
  // The chain hash of blocks [0, block) for `tokens` (0 for block 0).
  uint64_t ParentHash(absl::Span<const int32_t> tokens, int64_t block) const;

  KvCacheShape shape_;
  KvType type_;
  KvBlockPool& pool_;
  std::unique_ptr<KvBlockPool> own_pool_;  // Create: the private pool
  const bool paged_;
  int64_t n_heads_;       // layers × kv heads
  int64_t region_bytes_;  // one (layer, head)'s keys (or values) in a block
  int64_t length_ = 0;
  std::vector<Slot> slots_;                  // blocks [0, blocks_held())
  std::vector<KvBlockPool::Block> scratch_;  // Reserve's new blocks (capacity: the context)
};

}  // namespace tandem

#endif  // TANDEM_CORE_DECODER_KV_CACHE_H_
