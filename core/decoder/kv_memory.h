// The KV memory of one worker for one model: the block pool of the global layers and, when the
// model has sliding-window layers, the pool of their rings (KvCache keeps only the window of a
// sliding layer, so its blocks are recycled while the global layers' grow with the context).
// The two kinds of block differ in size (their layer counts), so each kind has its own pool.
//
// A budget is split so that both pools hold the same number of full-context sessions: a session
// of `context_size` positions takes ceil(context / 16) global blocks and at most
// KvCache::RingBlocks sliding blocks.
//
// Thread-safe (the pools are). Must outlive every cache made over it.
#ifndef TANDEM_CORE_DECODER_KV_MEMORY_H_
#define TANDEM_CORE_DECODER_KV_MEMORY_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "core/decoder/kv_block_pool.h"

namespace tandem {

struct KvCacheShape {
  int64_t n_layers = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t context_size = 0;  // positions
  // Sliding-window layers (ModelConfig's rule): layer l slides iff sliding_window > 0 and
  // l % sliding_pattern < sliding_pattern - 1. A query at p on such a layer sees positions
  // (p - sliding_window, p], so the cache keeps only a ring of recent blocks for them.
  int64_t sliding_window = 0;
  int64_t sliding_pattern = 0;

  bool IsSlidingLayer(int64_t layer) const {
    return sliding_window > 0 && sliding_pattern > 0 &&
           layer % sliding_pattern < sliding_pattern - 1;
  }
  int64_t sliding_layers() const;
  int64_t global_layers() const { return n_layers - sliding_layers(); }
};

// New blocks a cache needs, by pool.
struct KvBlockDemand {
  int64_t global = 0;
  int64_t sliding = 0;
  int64_t total() const { return global + sliding; }
  KvBlockDemand& operator+=(const KvBlockDemand& other) {
    global += other.global;
    sliding += other.sliding;
    return *this;
  }
};

class KvMemory {
 public:
  // Pools for caches of `shape` (its context: the sessions', for the budget split).
  // budget_bytes 0: unbounded. kInvalidArgument for a bad shape or a budget that holds no block
  // of a pool (naming the sizes); the pools' own errors.
  static absl::StatusOr<std::unique_ptr<KvMemory>> Create(const KvCacheShape& shape, KvType type,
                                                          int64_t budget_bytes);

  const KvCacheShape& shape() const { return shape_; }
  KvType type() const { return type_; }
  // Null when no layer is of that kind.
  KvBlockPool* global() const { return global_.get(); }
  KvBlockPool* sliding() const { return sliding_.get(); }

  // Whether both pools could supply `demand` now.
  bool CanAllocate(const KvBlockDemand& demand) const;
  // Both pools' counters summed (blocks of either kind; free -1 when unbounded).
  KvBlockPool::Stats stats() const;
  // Bytes of the blocks referenced by caches now.
  int64_t bytes_in_use() const;

 private:
  KvMemory(const KvCacheShape& shape, KvType type) : shape_(shape), type_(type) {}

  const KvCacheShape shape_;
  const KvType type_;
  std::unique_ptr<KvBlockPool> global_;
  std::unique_ptr<KvBlockPool> sliding_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_DECODER_KV_MEMORY_H_
