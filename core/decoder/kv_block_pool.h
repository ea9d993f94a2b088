// The KV memory of one worker: blocks of kKeyBlock (16) positions — keys and values of every
// layer and KV head, plus the i8 row scales — shared by all the sessions' KvCaches.
//
// Blocks are reference counted. A cache takes fresh blocks with Allocate, and may publish a
// fully written block under the chain hash of its tokens (KvBlockHash): a published block is
// immutable, and other caches with the same token prefix adopt it (Lookup) instead of
// computing it again. A published block nobody references stays "cached" in the prefix table
// until a fresh block is needed and none is free: then the least recently released is
// recycled and its hash dropped.
//
// Memory comes from the OS (anonymous mappings, zero pages until touched) in chunks as blocks
// are first needed, never the whole budget up front, and never more than max_blocks blocks;
// it is returned only when the pool is destroyed. A bounded pool fills its budget before it
// recycles cached blocks (memory held for reuse); an unbounded one recycles them before it
// grows.
//
// Thread-safe. The pool must outlive every cache that uses it.
#ifndef TANDEM_CORE_DECODER_KV_BLOCK_POOL_H_
#define TANDEM_CORE_DECODER_KV_BLOCK_POOL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "core/kernels/vector_ops.h"

namespace tandem {

enum class KvType { kF32, kF16, kI8 };

// Bytes of one stored element: 4, 2 or 1.
int64_t KvElementBytes(KvType type);

struct KvBlockShape {
  int64_t n_layers = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
};

// Chain hash of a full block: hash(parent, the 16 token ids), parent 0 for block 0. A fixed
// seed, so equal prefixes hash equally in every process.
uint64_t KvBlockHash(uint64_t parent, absl::Span<const int32_t> block_tokens);

class KvBlockPool {
 public:
  // max_blocks 0: no bound (grows on demand). kInvalidArgument for a non-positive dimension
  // or a negative bound; kResourceExhausted if one block would exceed 1 GiB.
  static absl::StatusOr<std::unique_ptr<KvBlockPool>> Create(const KvBlockShape& shape, KvType type,
                                                             int64_t max_blocks);
  // K + V (+ i8 scales) of 16 positions for all layers and heads.
  static int64_t BlockBytes(const KvBlockShape& shape, KvType type);

  ~KvBlockPool();
  KvBlockPool(const KvBlockPool&) = delete;
  KvBlockPool& operator=(const KvBlockPool&) = delete;

  int64_t block_bytes() const { return block_bytes_; }
  KvType type() const { return type_; }
  const KvBlockShape& shape() const { return shape_; }
  int64_t max_blocks() const { return max_blocks_; }  // 0: unbounded

  // Counters for metrics (one consistent snapshot).
  struct Stats {
    int64_t used = 0;             // referenced by at least one cache
    int64_t shared = 0;           // referenced by two or more caches
    int64_t cached = 0;           // unreferenced but still holding a published prefix
    int64_t free = 0;             // max_blocks - used (cached count as free); -1 unbounded
    int64_t allocated_bytes = 0;  // memory mapped from the OS (resident once written)
  };
  Stats stats() const;
  // Blocks an Allocate could get now (never obtained, free or cached): max_blocks - used;
  // INT64_MAX when unbounded.
  int64_t available() const;

  // ---- For KvCache. ----
  struct Block {
    int32_t id = -1;
    uint8_t* data = nullptr;  // block_bytes(), valid while referenced
  };
  // Fills every element of `out` with a fresh block referenced once by the caller (contents
  // unspecified), all or none. kResourceExhausted naming the count and the pool's size.
  absl::Status Allocate(absl::Span<Block> out);
  // Drops one reference to each block.
  void Unref(absl::Span<const int32_t> ids);
  // The published block with this hash, parent hash and tokens, referenced for the caller;
  // id -1 when there is none.
  Block Lookup(uint64_t hash, uint64_t parent, absl::Span<const int32_t> block_tokens);
  // Publishes block `id` (referenced by the caller, fully written; immutable from now on)
  // under `hash`. False, and the block stays unpublished, when another block already holds
  // the hash.
  bool Publish(int32_t id, uint64_t hash, uint64_t parent, absl::Span<const int32_t> block_tokens);

 private:
  struct Meta {
    uint8_t* data = nullptr;
    int32_t refs = 0;
    bool published = false;
    uint64_t hash = 0, parent = 0;
    int32_t tokens[kKeyBlock] = {};
    int32_t prev = -1, next = -1;  // the cached list (unreferenced published blocks)
  };
  KvBlockPool(const KvBlockShape& shape, KvType type, int64_t max_blocks);

  // Maps at least `count` more blocks (capped by the bound) onto the free list.
  absl::Status GrowLocked(int64_t count) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A fresh block's id: free list first, else the least recently cached one (unpublished).
  int32_t TakeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void LinkCachedLocked(int32_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UnlinkCachedLocked(int32_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RefLocked(int32_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const KvBlockShape shape_;
  const KvType type_;
  const int64_t max_blocks_;
  const int64_t block_bytes_;

  mutable absl::Mutex mu_;
  std::vector<Meta> meta_ ABSL_GUARDED_BY(mu_);                        // by id
  std::vector<int32_t> free_ ABSL_GUARDED_BY(mu_);                     // unreferenced, unpublished
  int32_t cached_head_ ABSL_GUARDED_BY(mu_) = -1;                      // least recently released
  int32_t cached_tail_ ABSL_GUARDED_BY(mu_) = -1;                      // most recently released
  absl::flat_hash_map<uint64_t, int32_t> table_ ABSL_GUARDED_BY(mu_);  // hash -> id
  int64_t used_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t shared_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t cached_ ABSL_GUARDED_BY(mu_) = 0;
  struct Chunk {
    void* addr;
    int64_t bytes;
  };
  std::vector<Chunk> chunks_ ABSL_GUARDED_BY(mu_);
  int64_t allocated_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tandem

#endif  // TANDEM_CORE_DECODER_KV_BLOCK_POOL_H_
