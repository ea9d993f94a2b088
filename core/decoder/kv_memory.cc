#include "core/decoder/kv_memory.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/decoder/kv_cache.h"

namespace tandem {

int64_t KvCacheShape::sliding_layers() const {
  int64_t count = 0;
  for (int64_t layer = 0; layer < n_layers; ++layer) count += IsSlidingLayer(layer) ? 1 : 0;
  return count;
}

absl::StatusOr<std::unique_ptr<KvMemory>> KvMemory::Create(const KvCacheShape& shape, KvType type,
                                                           int64_t budget_bytes) {
  if (shape.n_layers <= 0 || shape.n_kv_heads <= 0 || shape.head_dim <= 0 ||
      shape.context_size <= 0 || budget_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("KV memory: layers ", shape.n_layers, ", kv heads ", shape.n_kv_heads,
                     ", head_dim ", shape.head_dim, ", context ", shape.context_size,
                     " must be positive, budget ", budget_bytes, " non-negative"));
  }
  const int64_t global_layers = shape.global_layers(), sliding_layers = shape.sliding_layers();
  const KvBlockShape global_shape{global_layers, shape.n_kv_heads, shape.head_dim};
  const KvBlockShape sliding_shape{sliding_layers, shape.n_kv_heads, shape.head_dim};
  const double global_block = global_layers > 0 ? KvBlockPool::BlockBytes(global_shape, type) : 0;
  const double sliding_block =
      sliding_layers > 0 ? KvBlockPool::BlockBytes(sliding_shape, type) : 0;
  int64_t max_global = 0, max_sliding = 0;
  if (budget_bytes > 0) {
    // Each pool's share is what it holds of one full-context session.
    const double global_session = global_block * ((shape.context_size + kKeyBlock - 1) / kKeyBlock);
    const double sliding_session = sliding_block * KvCache::RingBlocks(shape);
    const double global_share =
        double(budget_bytes) * global_session / (global_session + sliding_session);
    max_global = global_layers > 0 ? static_cast<int64_t>(global_share / global_block) : 0;
    max_sliding = sliding_layers > 0
                      ? static_cast<int64_t>((double(budget_bytes) - global_share) / sliding_block)
                      : 0;
    if ((global_layers > 0 && max_global == 0) || (sliding_layers > 0 && max_sliding == 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "KV memory: a KV budget of ", budget_bytes, " bytes holds no block of ",
          max_global == 0 && global_layers > 0 ? global_block : sliding_block, " bytes"));
    }
  }
  std::unique_ptr<KvMemory> memory(new KvMemory(shape, type));
  if (global_layers > 0) {
    ASSIGN_OR_RETURN(memory->global_, KvBlockPool::Create(global_shape, type, max_global));
  }
  if (sliding_layers > 0) {
    ASSIGN_OR_RETURN(memory->sliding_, KvBlockPool::Create(sliding_shape, type, max_sliding));
  }
  return memory;
}

bool KvMemory::CanAllocate(const KvBlockDemand& demand) const {
  const bool global_ok =
      demand.global == 0 || (global_ != nullptr && global_->available() >= demand.global);
  const bool sliding_ok =
      demand.sliding == 0 || (sliding_ != nullptr && sliding_->available() >= demand.sliding);
  return global_ok && sliding_ok;
}

KvBlockPool::Stats KvMemory::stats() const {
  KvBlockPool::Stats total;
  bool unbounded = false;
  for (const KvBlockPool* pool : {global_.get(), sliding_.get()}) {
    if (pool == nullptr) continue;
    const KvBlockPool::Stats s = pool->stats();
    total.used += s.used;
    total.shared += s.shared;
    total.cached += s.cached;
    total.allocated_bytes += s.allocated_bytes;
    unbounded = unbounded || s.free < 0;
    total.free += s.free < 0 ? 0 : s.free;
  }
  if (unbounded) total.free = -1;
  return total;
}

int64_t KvMemory::bytes_in_use() const {
  int64_t bytes = 0;
  for (const KvBlockPool* pool : {global_.get(), sliding_.get()}) {
    if (pool != nullptr) bytes += pool->stats().used * pool->block_bytes();
  }
  return bytes;
}

}  // namespace tandem
