// The key/value cache of one session: for every layer and KV head, head_dim values per
// position for the keys and for the values, stored as f32, f16 or i8 (with one f32 scale
// per position's row).
//
// Memory is a table of blocks of kKeyBlock (16) positions drawn from a KvBlockPool. Within a
// block, per (layer, KV head): keys transposed ([head_dim][16], vector_ops.h), so a query
// scores 16 positions per vector operation; values row by row ([16][head_dim]).
//
// Sliding-window layers (KvCacheShape) have a table of their own, from a pool of their own
// (KvMemory): a ring. Once the cache's length has passed a block by the window plus
// kRingSlack positions, the block is dropped (back to the pool), so these layers hold about
// window + kRingSlack positions whatever the context; the global layers' table grows. A caller
// may go back (Truncate) at most kRingSlack positions behind the furthest length reached and
// go on from there; further back than resume_floor(), only a restart from position 0 is
// exact (the sliding layers forgot what the window needs): ResumePoint says where to resume.
//
// Two kinds:
//   - Create: private pools; the global table holds exactly ceil(context / 16) blocks, all
//     taken at creation and kept for the cache's life (Truncate and Release only move the
//     length); the ring takes its blocks from a private pool sized for it (RingBlocks).
//     Reserve always succeeds for passes of up to kMaxPassRows rows; prefixes are neither
//     published nor adopted.
//   - CreatePaged: blocks come from shared pools on demand (Reserve) and go back on
//     Truncate / Release. Full blocks may be published (PublishFullBlocks) and adopted by
//     other caches with the same token prefix (AdoptCachedPrefix); a published block is
//     read-only, and writing into one is preceded by a private copy (Reserve).
//
// Thread-safety: not thread-safe; a session's cache is used by one thread at a time. Writes
// of different (layer, position) rows from different threads are fine, as are concurrent
// KeyScores / ValueSum; Reserve / Truncate / SetLength / Adopt / Publish / Release are not
// concurrent with anything else on the same cache.
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
#include "core/decoder/kv_memory.h"
#include "core/kernels/vector_ops.h"

namespace tandem {

// enum class KvType { kF32, kF16, kI8 } is in kv_block_pool.h.
absl::string_view KvTypeName(KvType type);
// "f32", "f16" or "i8"; anything else is kInvalidArgument naming the value.
absl::StatusOr<KvType> ParseKvType(absl::string_view name);

// struct KvCacheShape is in kv_memory.h.

class KvCache {
 public:
  // Positions a sliding layer keeps beyond its window, so that going back this far (a
  // rejected speculation: at most SpeculationLimits::kWorkerMaxGuesses, 64, guesses) needs no
  // restart.
  static constexpr int64_t kRingSlack = 64;
  // Rows of one pass a Create'd cache's ring is sized for (Decoder::kMaxChunk).
  static constexpr int64_t kMaxPassRows = 512;

  // Private pools (see above). kInvalidArgument for a non-positive dimension;
  // kResourceExhausted if the size overflows.
  static absl::StatusOr<std::unique_ptr<KvCache>> Create(const KvCacheShape& shape, KvType type);
  // A cache of up to `context_size` positions whose blocks come from `memory`'s pools on
  // demand (none at creation); its layers are memory.shape()'s. `memory` must outlive the
  // cache. kInvalidArgument for a non-positive context; kResourceExhausted if the context
  // would exceed 1 TiB.
  static absl::StatusOr<std::unique_ptr<KvCache>> CreatePaged(KvMemory& memory,
                                                              int64_t context_size);
  // The same over one pool: every layer global.
  static absl::StatusOr<std::unique_ptr<KvCache>> CreatePaged(KvBlockPool& pool,
                                                              int64_t context_size);
  ~KvCache();
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  // Bytes a Create'd cache of this shape and type takes (for budgets, before creating it):
  // the global layers' whole context and the sliding layers' ring.
  static int64_t BytesFor(const KvCacheShape& shape, KvType type);
  // The most blocks a sliding table holds at once (passes of up to kMaxPassRows rows), at most
  // the context's; 0 when no layer slides.
  static int64_t RingBlocks(const KvCacheShape& shape);

  const KvCacheShape& shape() const { return shape_; }
  KvType type() const { return type_; }
  // Create: BytesFor(shape, type). Paged: the blocks held now.
  int64_t bytes() const;
  // The blocks held now, of both tables (a Create'd global table is always whole).
  int64_t held_bytes() const;

  // Positions filled so far; the next token runs at position length().
  int64_t length() const { return length_; }
  // Forgets positions >= new_length (new_length <= length(); checked by the caller); drops
  // the references to the blocks wholly at or past new_length (paged, and every ring).
  void Truncate(int64_t new_length);
  // Sets the length after a pass wrote [length(), length); the ring then drops the blocks
  // the window and the slack have left behind.
  void SetLength(int64_t length);
  // The positions p the cache can go on from (Truncate(p), then run p on): 0, and
  // resume_floor() <= p <= length(). 0 unless a sliding layer dropped blocks.
  int64_t resume_floor() const;
  // `wanted` (<= length()) if the cache can go on from there, else 0.
  int64_t ResumePoint(int64_t wanted) const { return wanted >= resume_floor() ? wanted : 0; }

  // Ensures blocks for positions [0, positions) (positions <= context_size) such that writes
  // at [length(), positions) are private to this cache: a shared or published block holding
  // positions >= length() is first replaced by a private copy (copy-on-write).
  // kResourceExhausted (naming the positions, the blocks needed and the pool's size) when the
  // pool cannot supply them, and then nothing changes; kOutOfRange past context_size.
  // Idempotent. Always OK (nothing to do) for a Create'd cache within its context.
  absl::Status Reserve(int64_t positions);
  // New blocks Reserve(positions) would take now from the shared pools (copies included);
  // none for a Create'd cache.
  KvBlockDemand Demand(int64_t positions) const;
  int64_t BlocksNeeded(int64_t positions) const { return Demand(positions).total(); }
  // Drops every block (a Create'd cache keeps its global table); length 0.
  void Release();
  // Blocks held now, of both tables; of the sliding layers' ring.
  int64_t blocks_held() const { return tables_[kGlobal].held() + tables_[kSliding].held(); }
  int64_t sliding_blocks_held() const { return tables_[kSliding].held(); }

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
  //
  // With sliding layers, a prefix of length L is adopted only with the ring blocks the window
  // at L needs ((L - window, L)); adoption stops at the longest such L.

  // Stores the head_dim values of `kv_head` at `position` in layer `layer`. The position's
  // block must be held and private (Reserve first; asserted in debug builds).
  void WriteK(int64_t layer, int64_t kv_head, int64_t position, const float* values);
  void WriteV(int64_t layer, int64_t kv_head, int64_t position, const float* values);

  // Asks the memory for the key and value lines of (layer, kv_head) in the first blocks of
  // [first, positions) that are held, ahead of a KeyScores/ValueSum over them. No effect on
  // any result.
  void Prefetch(int64_t layer, int64_t kv_head, int64_t first, int64_t positions) const;

  // For n_q queries j (at q + j · q_stride; the query heads sharing this KV head), `first` a
  // multiple of 16 whose block is held:
  //   scores[j · scores_stride + p] = scale · (q_j · K[layer, kv_head, p])  first <= p < positions
  // A query's scores do not depend on n_q (KeyBlockScores*).
  void KeyScores(int64_t layer, int64_t kv_head, const float* q, int64_t q_stride, int n_q,
                 int64_t first, int64_t positions, float scale, float* scores,
                 int64_t scores_stride) const;
  // For n_q weight vectors j (at weights + j · weights_stride), `first` as above:
  //   out[j · out_stride + d] = Σ_p weights_j[p] · V[layer, kv_head, p][d]  first <= p < positions
  // (WeightedSumBlocks*, bit-identical to WeightedSum* over contiguous rows; starting at a
  // block, the even/odd partial sums see the same rows, so leading zero weights may be skipped).
  void ValueSum(int64_t layer, int64_t kv_head, const float* weights, int64_t weights_stride,
                int n_q, int64_t first, int64_t positions, float* out, int64_t out_stride) const;
  // The stored rows as floats (for tests).
  void ReadK(int64_t layer, int64_t kv_head, int64_t position, float* out) const;
  void ReadV(int64_t layer, int64_t kv_head, int64_t position, float* out) const;

 private:
  // One block of a table; id -1 when not held (a ring's dropped blocks).
  struct Slot {
    int32_t id = -1;
    uint8_t* data = nullptr;
    bool writable = false;  // held, private to this cache and unpublished
    bool offered = false;   // full, and offered for publication (or adopted)
  };
  // The blocks of one kind of layer, by block index; held from `first` on.
  struct Table {
    KvBlockPool* pool = nullptr;  // null: no layer of this kind
    int64_t heads = 0;            // its layers × KV heads
    std::vector<Slot> slots;
    int64_t first = 0;  // the oldest held block (0 but in a ring)
    int64_t held() const { return pool == nullptr ? 0 : int64_t(slots.size()) - first; }
  };
  // A block's chain hash, once known.
  struct Hash {
    uint64_t value = 0;
    bool known = false;
  };
  static constexpr int kGlobal = 0, kSliding = 1;

  KvCache(const KvCacheShape& shape, KvType type, KvBlockPool* global, KvBlockPool* sliding,
          bool paged);
  // The table, and the head index within its blocks, of (layer, kv_head).
  const Table& TableOf(int64_t layer) const { return tables_[layer_table_[layer]]; }
  int64_t Head(int64_t layer, int64_t kv_head) const {
    return layer_index_[layer] * shape_.n_kv_heads + kv_head;
  }
  // Byte offsets within a block of a head's keys, values and i8 scales.
  const uint8_t* KeyRegion(const Table& t, int64_t block, int64_t head) const {
    return t.slots[block].data + head * region_bytes_;
  }
  const uint8_t* ValueRegion(const Table& t, int64_t block, int64_t head) const {
    return t.slots[block].data + (t.heads + head) * region_bytes_;
  }
  const float* KeyScales(const Table& t, int64_t block, int64_t head) const {
    return reinterpret_cast<const float*>(t.slots[block].data + 2 * t.heads * region_bytes_) +
           head * kKeyBlock;
  }
  const float* ValueScales(const Table& t, int64_t block, int64_t head) const {
    return KeyScales(t, block, head) + t.heads * kKeyBlock;
  }
  // Whether Truncate / Release drop this table's blocks (not a Create'd global table).
  bool Drops(int table) const { return paged_ || table == kSliding; }
  // Drops table t's blocks from `keep` on.
  void DropFrom(Table& t, int64_t keep);
  // Drops the ring's blocks the window and the slack have left behind at length().
  void TrimRing();
  // New blocks table t needs for positions [0, positions) to be held and writable past length().
  int64_t TableDemand(const Table& t, int64_t positions) const;
  // Places `fresh` blocks into table t as Reserve(positions) needs them.
  void Place(Table& t, int64_t positions, absl::Span<const KvBlockPool::Block> fresh);
  // Adoption of the ring blocks for prefixes ending at blocks in (first, end]: the longest end
  // whose window they cover (first if none); adopted blocks placed, the others unreferenced.
  int64_t AdoptRing(absl::Span<const int32_t> tokens, int64_t first, int64_t end,
                    absl::Span<const uint64_t> chain, absl::Span<const uint64_t> parents);
  // The block holding `position` of `layer`, which a write is about to change.
  uint8_t* WritableBlock(int64_t layer, int64_t position) const;
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
  std::unique_ptr<KvBlockPool> own_pools_[2];  // Create: the private pools
  const bool paged_;
  int64_t region_bytes_;  // one (layer, head)'s keys (or values) in a block
  int64_t length_ = 0;
  std::vector<int8_t> layer_table_;   // [n_layers] kGlobal or kSliding
  std::vector<int64_t> layer_index_;  // [n_layers] the layer's index within its table
  Table tables_[2];
  std::vector<Hash> hashes_;                 // by block
  std::vector<KvBlockPool::Block> scratch_;  // Reserve's new blocks (capacity: 2 × context)
};

}  // namespace tandem

#endif  // TANDEM_CORE_DECODER_KV_CACHE_H_
