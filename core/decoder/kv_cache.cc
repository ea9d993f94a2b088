#include "core/decoder/kv_cache.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/kernels/vector_ops.h"
#include "core/model/tensor_type.h"

namespace tandem {
namespace {

// Positions to the block holding them, and block counts.
int64_t BlocksFor(int64_t positions) { return (positions + kKeyBlock - 1) / kKeyBlock; }

// Calls use(addresses) with addresses[b] = address(b) as a T*, b < blocks: on the stack up
// to 1024 blocks (16384 positions), so a decode step allocates nothing.
template <typename T, typename Address, typename Use>
void WithBlockAddresses(int64_t blocks, const Address& address, const Use& use) {
  constexpr int64_t kStackBlocks = 1024;
  const T* on_stack[kStackBlocks];
  std::vector<const T*> on_heap;
  const T** addresses = on_stack;
  if (blocks > kStackBlocks) {
    on_heap.resize(blocks);
    addresses = on_heap.data();
  }
  for (int64_t b = 0; b < blocks; ++b) addresses[b] = reinterpret_cast<const T*>(address(b));
  use(addresses);
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

int64_t KvCache::RingBlocks(const KvCacheShape& shape) {
  if (shape.sliding_layers() == 0) return 0;
  // Held at once: from (length - window + 1 - slack) / 16 through the last row of a pass.
  return std::min(BlocksFor(shape.context_size),
                  BlocksFor(shape.sliding_window + kRingSlack + kMaxPassRows) + 2);
}

int64_t KvCache::BytesFor(const KvCacheShape& shape, KvType type) {
  const int64_t sliding_layers = shape.sliding_layers();
  const double per_layer_block =
      double(KvBlockPool::BlockBytes({1, shape.n_kv_heads, shape.head_dim}, type));
  const double total =
      per_layer_block * (double(shape.n_layers - sliding_layers) * BlocksFor(shape.context_size) +
                         double(sliding_layers) * RingBlocks(shape));
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
  std::unique_ptr<KvBlockPool> pools[2];
  const int64_t layers[2] = {shape.global_layers(), shape.sliding_layers()};
  const int64_t blocks[2] = {BlocksFor(shape.context_size), RingBlocks(shape)};
  for (int t : {kGlobal, kSliding}) {
    if (layers[t] == 0) continue;
    ASSIGN_OR_RETURN(pools[t], KvBlockPool::Create({layers[t], shape.n_kv_heads, shape.head_dim},
                                                   type, blocks[t]));
  }
  std::unique_ptr<KvCache> cache(
      new KvCache(shape, type, pools[kGlobal].get(), pools[kSliding].get(), /*paged=*/false));
  for (int t : {kGlobal, kSliding}) cache->own_pools_[t] = std::move(pools[t]);
  // The global table whole, now; the ring's pool mapped now, its blocks taken as needed.
  for (int t : {kGlobal, kSliding}) {
    KvBlockPool* pool = cache->tables_[t].pool;
    if (pool == nullptr) continue;
    absl::Span<KvBlockPool::Block> all(cache->scratch_.data(), blocks[t]);
    RETURN_IF_ERROR(pool->Allocate(all));
    if (t == kGlobal) {
      for (const KvBlockPool::Block& block : all) {
        cache->tables_[t].slots.push_back({block.id, block.data, /*writable=*/true});
      }
    } else {
      for (const KvBlockPool::Block& block : all) pool->Unref({&block.id, 1});
    }
  }
  return cache;
}

absl::StatusOr<std::unique_ptr<KvCache>> KvCache::CreatePaged(KvMemory& memory,
                                                              int64_t context_size) {
  KvCacheShape shape = memory.shape();
  shape.context_size = context_size;
  if (context_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("paged KV cache context must be positive, not ", context_size));
  }
  if (BytesFor(shape, memory.type()) > (int64_t{1} << 40)) {
    return absl::ResourceExhaustedError(absl::StrCat("KV cache of ", context_size,
                                                     " positions would need ",
                                                     BytesFor(shape, memory.type()), " bytes"));
  }
  return std::unique_ptr<KvCache>(
      new KvCache(shape, memory.type(), memory.global(), memory.sliding(), /*paged=*/true));
}

absl::StatusOr<std::unique_ptr<KvCache>> KvCache::CreatePaged(KvBlockPool& pool,
                                                              int64_t context_size) {
  const KvBlockShape& b = pool.shape();
  const KvCacheShape shape{b.n_layers, b.n_kv_heads, b.head_dim, context_size};
  if (context_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("paged KV cache context must be positive, not ", context_size));
  }
  if (BytesFor(shape, pool.type()) > (int64_t{1} << 40)) {
    return absl::ResourceExhaustedError(absl::StrCat("KV cache of ", context_size,
                                                     " positions would need ",
                                                     BytesFor(shape, pool.type()), " bytes"));
  }
  return std::unique_ptr<KvCache>(new KvCache(shape, pool.type(), &pool, nullptr, true));
}

KvCache::KvCache(const KvCacheShape& shape, KvType type, KvBlockPool* global, KvBlockPool* sliding,
                 bool paged)
    : shape_(shape),
      type_(type),
      paged_(paged),
      region_bytes_(kKeyBlock * shape_.head_dim * KvElementBytes(type_)) {
  int64_t counts[2] = {0, 0};
  for (int64_t layer = 0; layer < shape_.n_layers; ++layer) {
    const int t = shape_.IsSlidingLayer(layer) ? kSliding : kGlobal;
    layer_table_.push_back(static_cast<int8_t>(t));
    layer_index_.push_back(counts[t]++);
  }
  tables_[kGlobal].pool = global;
  tables_[kSliding].pool = sliding;
  for (int t : {kGlobal, kSliding}) {
    tables_[t].heads = counts[t] * shape_.n_kv_heads;
    if (tables_[t].pool != nullptr) tables_[t].slots.reserve(BlocksFor(shape_.context_size));
  }
  scratch_.resize(2 * BlocksFor(shape_.context_size));
}

KvCache::~KvCache() {
  Release();
  Table& global = tables_[kGlobal];
  if (!paged_ && global.pool != nullptr) DropFrom(global, 0);
}

int64_t KvCache::bytes() const { return paged_ ? held_bytes() : BytesFor(shape_, type_); }

int64_t KvCache::held_bytes() const {
  int64_t bytes = 0;
  for (const Table& t : tables_) {
    if (t.pool != nullptr) bytes += t.held() * t.pool->block_bytes();
  }
  return bytes;
}

int64_t KvCache::resume_floor() const {
  const Table& ring = tables_[kSliding];
  if (ring.pool == nullptr || ring.first == 0) return 0;
  // A query at p reads the ring's positions (p - window, p]: held from first · 16 on.
  return ring.first * kKeyBlock + shape_.sliding_window - 1;
}

void KvCache::ForgetHashesFrom(int64_t length) {
  const int64_t from = length / kKeyBlock;
  for (int64_t b = from; b < static_cast<int64_t>(hashes_.size()); ++b) hashes_[b].known = false;
  for (Table& t : tables_) {
    for (int64_t b = from; b < static_cast<int64_t>(t.slots.size()); ++b) {
      t.slots[b].offered = false;
    }
  }
}

void KvCache::DropFrom(Table& t, int64_t keep) {
  const int64_t size = static_cast<int64_t>(t.slots.size());
  for (int64_t b = std::max(keep, t.first); b < size; ++b) t.pool->Unref({&t.slots[b].id, 1});
  if (keep < size) t.slots.resize(keep);
  t.first = std::min(t.first, keep);
}

void KvCache::TrimRing() {
  Table& ring = tables_[kSliding];
  if (ring.pool == nullptr) return;
  // Kept: every block a query at length() - kRingSlack or later reads.
  const int64_t oldest = std::max<int64_t>(0, length_ - shape_.sliding_window + 1 - kRingSlack);
  const int64_t keep_from = std::min(oldest / kKeyBlock, static_cast<int64_t>(ring.slots.size()));
  for (int64_t b = ring.first; b < keep_from; ++b) {
    ring.pool->Unref({&ring.slots[b].id, 1});
    ring.slots[b] = Slot{};
  }
  ring.first = std::max(ring.first, keep_from);
}

void KvCache::Truncate(int64_t new_length) {
  length_ = new_length;
  ForgetHashesFrom(new_length);
  for (int t : {kGlobal, kSliding}) {
    if (tables_[t].pool != nullptr && Drops(t)) DropFrom(tables_[t], BlocksFor(new_length));
  }
}

void KvCache::SetLength(int64_t length) {
  if (length < length_) ForgetHashesFrom(length);
  length_ = length;
  TrimRing();
}

void KvCache::Release() {
  length_ = 0;
  hashes_.clear();
  for (int t : {kGlobal, kSliding}) {
    if (tables_[t].pool != nullptr && Drops(t)) DropFrom(tables_[t], 0);
  }
}

int64_t KvCache::TableDemand(const Table& t, int64_t positions) const {
  if (t.pool == nullptr) return 0;
  const int64_t blocks = BlocksFor(std::min(positions, shape_.context_size));
  const int64_t size = static_cast<int64_t>(t.slots.size());
  int64_t needed = std::max<int64_t>(0, blocks - size);
  for (int64_t b = length_ / kKeyBlock; b < std::min(blocks, size); ++b) {
    needed += t.slots[b].writable ? 0 : 1;  // shared, published or dropped
  }
  return needed;
}

KvBlockDemand KvCache::Demand(int64_t positions) const {
  if (!paged_) return {};
  return {TableDemand(tables_[kGlobal], positions), TableDemand(tables_[kSliding], positions)};
}

void KvCache::Place(Table& t, int64_t positions, absl::Span<const KvBlockPool::Block> fresh) {
  size_t next = 0;
  const int64_t blocks = BlocksFor(positions);
  const int64_t size = static_cast<int64_t>(t.slots.size());
  for (int64_t b = length_ / kKeyBlock; b < std::min(blocks, size); ++b) {
    Slot& slot = t.slots[b];
    if (slot.writable) continue;
    const KvBlockPool::Block copy = fresh[next++];
    if (slot.id >= 0) {
      // Positions below length() stay; the rest are about to be written.
      if (b * kKeyBlock < length_) std::memcpy(copy.data, slot.data, t.pool->block_bytes());
      t.pool->Unref({&slot.id, 1});
    }
    slot = {copy.id, copy.data, /*writable=*/true};
    t.first = std::min(t.first, b);
  }
  while (static_cast<int64_t>(t.slots.size()) < blocks) {
    const KvBlockPool::Block block = fresh[next++];
    t.slots.push_back({block.id, block.data, /*writable=*/true});
  }
}

absl::Status KvCache::Reserve(int64_t positions) {
  if (positions > shape_.context_size) {
    return absl::OutOfRangeError(absl::StrCat("KV cache reserve of ", positions,
                                              " positions is past the context of ",
                                              shape_.context_size));
  }
  const int64_t needed[2] = {TableDemand(tables_[kGlobal], positions),
                             TableDemand(tables_[kSliding], positions)};
  if (needed[kGlobal] + needed[kSliding] == 0) return absl::OkStatus();
  absl::Span<KvBlockPool::Block> fresh[2] = {
      absl::MakeSpan(scratch_.data(), needed[kGlobal]),
      absl::MakeSpan(scratch_.data() + needed[kGlobal], needed[kSliding])};
  for (int t : {kGlobal, kSliding}) {
    if (needed[t] == 0) continue;
    absl::Status taken = tables_[t].pool->Allocate(fresh[t]);
    if (!taken.ok()) {
      if (t == kSliding && needed[kGlobal] > 0) {  // all or nothing
        for (const KvBlockPool::Block& block : fresh[kGlobal]) {
          tables_[kGlobal].pool->Unref({&block.id, 1});
        }
      }
      return absl::ResourceExhaustedError(
          absl::StrCat("KV cache: positions [0, ", positions, ") need ", needed[t], " more ",
                       t == kSliding ? "sliding-layer " : "", "blocks: ", taken.message()));
    }
  }
  for (int t : {kGlobal, kSliding}) {
    if (needed[t] > 0) Place(tables_[t], positions, fresh[t]);
  }
  return absl::OkStatus();
}

uint64_t KvCache::ParentHash(absl::Span<const int32_t> tokens, int64_t block) const {
  // The latest own hash of a block wholly below length(), then the tokens from there.
  int64_t known = std::min({block, static_cast<int64_t>(hashes_.size()), length_ / kKeyBlock});
  while (known > 0 && !hashes_[known - 1].known) --known;
  uint64_t parent = known > 0 ? hashes_[known - 1].value : 0;
  for (int64_t b = known; b < block; ++b) {
    parent = KvBlockHash(parent, tokens.subspan(b * kKeyBlock, kKeyBlock));
  }
  return parent;
}

uint64_t KvCache::BlockHashAt(absl::Span<const int32_t> tokens, int64_t position) const {
  if (position < 0 || position % kKeyBlock != 0 ||
      static_cast<int64_t>(tokens.size()) < position + kKeyBlock) {
    return 0;
  }
  const int64_t block = position / kKeyBlock;
  return KvBlockHash(ParentHash(tokens, block), tokens.subspan(position, kKeyBlock));
}

int64_t KvCache::AdoptCachedPrefix(absl::Span<const int32_t> tokens) {
  if (!paged_ || length_ % kKeyBlock != 0) return 0;
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t first = length_ / kKeyBlock;
  // Block b is adoptable if it is full, inside the context and not the final token's.
  const int64_t limit = std::min(n - 1, shape_.context_size) / kKeyBlock;
  if (first >= limit) return 0;
  Table& global = tables_[kGlobal];
  std::vector<uint64_t> chain, parents;   // of blocks [first, end)
  std::vector<KvBlockPool::Block> found;  // the global blocks
  uint64_t parent = ParentHash(tokens, first);
  for (int64_t b = first; b < limit; ++b) {
    const absl::Span<const int32_t> block_tokens = tokens.subspan(b * kKeyBlock, kKeyBlock);
    const uint64_t hash = KvBlockHash(parent, block_tokens);
    if (global.pool != nullptr) {
      const KvBlockPool::Block block = global.pool->Lookup(hash, parent, block_tokens);
      if (block.id < 0) break;
      found.push_back(block);
    }
    chain.push_back(hash);
    parents.push_back(parent);
    parent = hash;
  }
  int64_t end = first + static_cast<int64_t>(chain.size());
  if (tables_[kSliding].pool != nullptr) end = AdoptRing(tokens, first, end, chain, parents);
  if (static_cast<int64_t>(hashes_.size()) < end) hashes_.resize(end);
  for (int64_t b = first; b < end; ++b) hashes_[b] = {chain[b - first], true};
  for (int64_t b = first; b < first + static_cast<int64_t>(found.size()); ++b) {
    const KvBlockPool::Block block = found[b - first];
    if (b >= end) {
      global.pool->Unref({&block.id, 1});
      continue;
    }
    const Slot adopted{block.id, block.data, /*writable=*/false, /*offered=*/true};
    if (b < static_cast<int64_t>(global.slots.size())) {
      global.pool->Unref({&global.slots[b].id, 1});
      global.slots[b] = adopted;
    } else {
      global.slots.push_back(adopted);
    }
  }
  if (end == first) return 0;
  length_ = end * kKeyBlock;
  TrimRing();
  return length_ - first * kKeyBlock;
}

int64_t KvCache::AdoptRing(absl::Span<const int32_t> tokens, int64_t first, int64_t end,
                           absl::Span<const uint64_t> chain, absl::Span<const uint64_t> parents) {
  Table& ring = tables_[kSliding];
  std::vector<KvBlockPool::Block> found(end - first);  // id -1: missing or not looked up
  std::vector<bool> looked(end - first, false);
  // The oldest ring block the window at the end of block e needs.
  auto oldest = [&](int64_t e) {
    return std::max<int64_t>(0, e * kKeyBlock - shape_.sliding_window + 1) / kKeyBlock;
  };
  auto covered = [&](int64_t e) {
    // Own blocks below `first` must be held; the rest published.
    if (oldest(e) < first && ring.first > oldest(e)) return false;
    for (int64_t b = std::max(oldest(e), first); b < e; ++b) {
      const int64_t i = b - first;
      if (!looked[i]) {
        looked[i] = true;
        found[i] =
            ring.pool->Lookup(chain[i], parents[i], tokens.subspan(b * kKeyBlock, kKeyBlock));
      }
      if (found[i].id < 0) return false;
    }
    return true;
  };
  while (end > first && !covered(end)) --end;
  const int64_t keep_from = end > first ? std::max(oldest(end), first) : end;
  if (end > first && oldest(end) > first) DropFrom(ring, 0);  // older own blocks: not needed
  for (int64_t b = first; b < static_cast<int64_t>(found.size()) + first; ++b) {
    const KvBlockPool::Block block = found[b - first];
    if (b >= keep_from && b < end) {
      while (static_cast<int64_t>(ring.slots.size()) < b) ring.slots.push_back(Slot{});
      if (ring.slots.size() == static_cast<size_t>(b)) {
        ring.slots.push_back({block.id, block.data, /*writable=*/false, /*offered=*/true});
      } else {
        if (ring.slots[b].id >= 0) ring.pool->Unref({&ring.slots[b].id, 1});
        ring.slots[b] = {block.id, block.data, /*writable=*/false, /*offered=*/true};
      }
    } else if (block.id >= 0) {
      ring.pool->Unref({&block.id, 1});
    }
  }
  if (end > first && oldest(end) > first) ring.first = keep_from;
  return end;
}

void KvCache::PublishFullBlocks(absl::Span<const int32_t> tokens) {
  if (!paged_) return;
  const int64_t full = std::min(length_, static_cast<int64_t>(tokens.size())) / kKeyBlock;
  if (static_cast<int64_t>(hashes_.size()) < full) hashes_.resize(full);
  for (int64_t b = 0; b < full; ++b) {
    const uint64_t parent = b == 0 ? 0 : hashes_[b - 1].value;  // known: done in order
    const absl::Span<const int32_t> block_tokens = tokens.subspan(b * kKeyBlock, kKeyBlock);
    if (!hashes_[b].known) hashes_[b] = {KvBlockHash(parent, block_tokens), true};
    for (Table& t : tables_) {
      if (t.pool == nullptr || b >= static_cast<int64_t>(t.slots.size())) continue;
      Slot& slot = t.slots[b];
      if (slot.id < 0 || slot.offered) continue;
      slot.offered = true;
      if (t.pool->Publish(slot.id, hashes_[b].value, parent, block_tokens)) slot.writable = false;
    }
  }
}

uint8_t* KvCache::WritableBlock(int64_t layer, int64_t position) const {
  const Table& t = TableOf(layer);
  const int64_t block = position / kKeyBlock;
  assert(position >= 0 && block < static_cast<int64_t>(t.slots.size()) && t.slots[block].writable);
  return t.slots[block].data;
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
  uint8_t* block = WritableBlock(layer, position);
  const int64_t heads = TableOf(layer).heads;
  const int64_t head = Head(layer, kv_head), lane = position % kKeyBlock;
  const float scale = Store(values, block + head * region_bytes_, lane, kKeyBlock);
  if (type_ == KvType::kI8) {
    reinterpret_cast<float*>(block + 2 * heads * region_bytes_)[head * kKeyBlock + lane] = scale;
  }
}

void KvCache::WriteV(int64_t layer, int64_t kv_head, int64_t position, const float* values) {
  uint8_t* block = WritableBlock(layer, position);
  const int64_t heads = TableOf(layer).heads;
  const int64_t head = Head(layer, kv_head), lane = position % kKeyBlock;
  const float scale =
      Store(values, block + (heads + head) * region_bytes_, lane * shape_.head_dim, 1);
  if (type_ == KvType::kI8) {
    reinterpret_cast<float*>(block + 2 * heads * region_bytes_)[(heads + head) * kKeyBlock + lane] =
        scale;
  }
}

void KvCache::Prefetch(int64_t layer, int64_t kv_head, int64_t first, int64_t positions) const {
  // A head's keys and values lie in blocks of 16 positions anywhere in memory (paged): the
  // hardware prefetcher starts over at each, and a many-session decode step reads every
  // session's cache once, cold. Asked for one unit of work ahead (Decoder's decode step), the
  // lines arrive while the unit before runs. Prefetches change no result.
  constexpr int64_t kPrefetchBlocks = 8;
  const Table& t = TableOf(layer);
  const int64_t head = Head(layer, kv_head);
  const int64_t from = std::max(first / kKeyBlock, t.first);
  const int64_t to = std::min(
      {BlocksFor(positions), from + kPrefetchBlocks, static_cast<int64_t>(t.slots.size())});
  for (int64_t b = from; b < to; ++b) {
    if (t.slots[b].data == nullptr) continue;
    const uint8_t* keys = KeyRegion(t, b, head);
    const uint8_t* values = ValueRegion(t, b, head);
    for (int64_t line = 0; line < region_bytes_; line += 64) {
      __builtin_prefetch(keys + line, 0, 3);
      __builtin_prefetch(values + line, 0, 3);
    }
  }
}

void KvCache::KeyScores(int64_t layer, int64_t kv_head, const float* q, int64_t q_stride, int n_q,
                        int64_t first, int64_t positions, float scale, float* scores,
                        int64_t scores_stride) const {
  const Table& t = TableOf(layer);
  assert(first % kKeyBlock == 0 && first / kKeyBlock >= t.first &&
         BlocksFor(positions) <= static_cast<int64_t>(t.slots.size()));
  const int64_t head = Head(layer, kv_head);
  const int64_t dim = shape_.head_dim;
  float partial[4 * kKeyBlock];  // a last, partial block for up to 4 queries at a time
  for (int j0 = 0; j0 < n_q; j0 += 4) {
    const int group = std::min(4, n_q - j0);
    const float* qj = q + j0 * q_stride;
    float* sj = scores + j0 * scores_stride;
    for (int64_t start = first; start < positions; start += kKeyBlock) {
      const int64_t count = std::min(kKeyBlock, positions - start);
      const bool whole = count == kKeyBlock;
      float* out = whole ? sj + start : partial;
      const int64_t out_stride = whole ? scores_stride : kKeyBlock;
      const int64_t block = start / kKeyBlock;
      const uint8_t* keys = KeyRegion(t, block, head);
      switch (type_) {
        case KvType::kF32:
          KeyBlockScoresF32(qj, q_stride, group, reinterpret_cast<const float*>(keys), dim, scale,
                            out, out_stride);
          break;
        case KvType::kF16:
          KeyBlockScoresF16(qj, q_stride, group, reinterpret_cast<const uint16_t*>(keys), dim,
                            scale, out, out_stride);
          break;
        case KvType::kI8:
          KeyBlockScoresI8(qj, q_stride, group, KeyScales(t, block, head),
                           reinterpret_cast<const int8_t*>(keys), dim, scale, out, out_stride);
          break;
      }
      if (!whole) {
        for (int j = 0; j < group; ++j) {
          std::copy(out + j * kKeyBlock, out + j * kKeyBlock + count,
                    sj + j * scores_stride + start);
        }
      }
    }
  }
}

void KvCache::ValueSum(int64_t layer, int64_t kv_head, const float* weights, int64_t weights_stride,
                       int n_q, int64_t first, int64_t positions, float* out,
                       int64_t out_stride) const {
  const Table& t = TableOf(layer);
  const int64_t from = first / kKeyBlock, blocks = BlocksFor(positions) - from;
  assert(first % kKeyBlock == 0 && from >= t.first &&
         from + blocks <= static_cast<int64_t>(t.slots.size()));
  const int64_t head = Head(layer, kv_head);
  const int64_t dim = shape_.head_dim, n = positions - first;
  const float* w = weights + first;  // the kernels count rows from the first block
  auto rows = [&](int64_t b) { return ValueRegion(t, from + b, head); };
  switch (type_) {
    case KvType::kF32:
      return WithBlockAddresses<float>(blocks, rows, [&](const float* const* v) {
        WeightedSumBlocksF32(w, weights_stride, n_q, v, n, dim, out, out_stride);
      });
    case KvType::kF16:
      return WithBlockAddresses<uint16_t>(blocks, rows, [&](const uint16_t* const* v) {
        WeightedSumBlocksF16(w, weights_stride, n_q, v, n, dim, out, out_stride);
      });
    case KvType::kI8: {
      auto scales = [&](int64_t b) {
        return reinterpret_cast<const uint8_t*>(ValueScales(t, from + b, head));
      };
      return WithBlockAddresses<int8_t>(blocks, rows, [&](const int8_t* const* v) {
        WithBlockAddresses<float>(blocks, scales, [&](const float* const* s) {
          WeightedSumBlocksI8(w, weights_stride, n_q, s, v, n, dim, out, out_stride);
        });
      });
    }
  }
}

void KvCache::ReadK(int64_t layer, int64_t kv_head, int64_t position, float* out) const {
  const Table& t = TableOf(layer);
  const int64_t block = position / kKeyBlock, lane = position % kKeyBlock;
  assert(block >= t.first && block < static_cast<int64_t>(t.slots.size()));
  const int64_t head = Head(layer, kv_head);
  const float scale = type_ == KvType::kI8 ? KeyScales(t, block, head)[lane] : 1.0f;
  const uint8_t* keys = KeyRegion(t, block, head);
  for (int64_t i = 0; i < shape_.head_dim; ++i) {
    out[i] = Load(keys, i * kKeyBlock + lane) * scale;
  }
}

void KvCache::ReadV(int64_t layer, int64_t kv_head, int64_t position, float* out) const {
  const Table& t = TableOf(layer);
  const int64_t block = position / kKeyBlock, lane = position % kKeyBlock;
  assert(block >= t.first && block < static_cast<int64_t>(t.slots.size()));
  const int64_t head = Head(layer, kv_head);
  const float scale = type_ == KvType::kI8 ? ValueScales(t, block, head)[lane] : 1.0f;
  const uint8_t* values = ValueRegion(t, block, head);
  for (int64_t i = 0; i < shape_.head_dim; ++i) {
    out[i] = Load(values, lane * shape_.head_dim + i) * scale;
  }
}

}  // namespace tandem
