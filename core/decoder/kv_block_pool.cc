#include "core/decoder/kv_block_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"

namespace tandem {
namespace {

// Blocks are mapped at least this much at a time (fewer when the bound is closer).
constexpr int64_t kChunkBytes = int64_t{8} << 20;
constexpr int64_t kMaxBlockBytes = int64_t{1} << 30;

uint64_t Mix(uint64_t x) {  // the splitmix64 finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace

int64_t KvElementBytes(KvType type) {
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

uint64_t KvBlockHash(uint64_t parent, absl::Span<const int32_t> block_tokens) {
  constexpr uint64_t kSeed = 0x7a3d5c1e9b2f4861ULL;
  uint64_t h = Mix(parent ^ kSeed);
  for (int32_t token : block_tokens) {
    h = Mix(h + 0x9e3779b97f4a7c15ULL + static_cast<uint32_t>(token));
  }
  return Mix(h ^ static_cast<uint64_t>(block_tokens.size()));
}

int64_t KvBlockPool::BlockBytes(const KvBlockShape& shape, KvType type) {
  const double heads = double(shape.n_layers) * double(shape.n_kv_heads);
  const double per_row =
      double(shape.head_dim) * KvElementBytes(type) + (type == KvType::kI8 ? sizeof(float) : 0);
  const double total = 2 * heads * kKeyBlock * per_row;  // K and V
  return total > double(std::numeric_limits<int64_t>::max() / 2)
             ? std::numeric_limits<int64_t>::max()
             : static_cast<int64_t>(total);
}

absl::StatusOr<std::unique_ptr<KvBlockPool>> KvBlockPool::Create(const KvBlockShape& shape,
                                                                 KvType type, int64_t max_blocks) {
  if (shape.n_layers <= 0 || shape.n_kv_heads <= 0 || shape.head_dim <= 0 || max_blocks < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("KV block pool shape must be positive: layers ", shape.n_layers, ", kv heads ",
                     shape.n_kv_heads, ", head_dim ", shape.head_dim, ", max blocks ", max_blocks));
  }
  if (BlockBytes(shape, type) > kMaxBlockBytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "KV block of ", kKeyBlock, " positions would need ", BlockBytes(shape, type), " bytes"));
  }
  if (max_blocks > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("KV block pool of ", max_blocks, " blocks exceeds the id range"));
  }
  return std::unique_ptr<KvBlockPool>(new KvBlockPool(shape, type, max_blocks));
}

KvBlockPool::KvBlockPool(const KvBlockShape& shape, KvType type, int64_t max_blocks)
    : shape_(shape), type_(type), max_blocks_(max_blocks), block_bytes_(BlockBytes(shape, type)) {}

KvBlockPool::~KvBlockPool() {
  absl::MutexLock lock(&mu_);
  for (const Chunk& chunk : chunks_) munmap(chunk.addr, chunk.bytes);
}

KvBlockPool::Stats KvBlockPool::stats() const {
  absl::MutexLock lock(&mu_);
  Stats s;
  s.used = used_;
  s.shared = shared_;
  s.cached = cached_;
  s.free = max_blocks_ == 0 ? -1 : max_blocks_ - used_;
  s.allocated_bytes = allocated_bytes_;
  return s;
}

int64_t KvBlockPool::available() const {
  absl::MutexLock lock(&mu_);
  return max_blocks_ == 0 ? std::numeric_limits<int64_t>::max() : max_blocks_ - used_;
}

absl::Status KvBlockPool::GrowLocked(int64_t count) {
  const int64_t have = static_cast<int64_t>(meta_.size());
  int64_t blocks = std::max(count, std::max<int64_t>(1, kChunkBytes / block_bytes_));
  if (max_blocks_ > 0) blocks = std::min(blocks, max_blocks_ - have);
  if (max_blocks_ == 0 && have + blocks > std::numeric_limits<int32_t>::max()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("KV block pool cannot grow past ", have, " blocks"));
  }
  const int64_t bytes = blocks * block_bytes_;
  void* addr = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (addr == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot map ", bytes, " bytes for ", blocks,
                                                     " KV blocks: ", std::strerror(errno)));
  }
  chunks_.push_back({addr, bytes});
  allocated_bytes_ += bytes;
  meta_.resize(have + blocks);
  free_.reserve(have + blocks);  // Unref never allocates
  for (int64_t i = 0; i < blocks; ++i) {
    meta_[have + i].data = static_cast<uint8_t*>(addr) + i * block_bytes_;
  }
  for (int64_t i = blocks - 1; i >= 0; --i) free_.push_back(static_cast<int32_t>(have + i));
  return absl::OkStatus();
}

void KvBlockPool::LinkCachedLocked(int32_t id) {
  Meta& m = meta_[id];
  m.prev = cached_tail_;
  m.next = -1;
  (cached_tail_ >= 0 ? meta_[cached_tail_].next : cached_head_) = id;
  cached_tail_ = id;
  ++cached_;
}

void KvBlockPool::UnlinkCachedLocked(int32_t id) {
  Meta& m = meta_[id];
  (m.prev >= 0 ? meta_[m.prev].next : cached_head_) = m.next;
  (m.next >= 0 ? meta_[m.next].prev : cached_tail_) = m.prev;
  m.prev = m.next = -1;
  --cached_;
}

int32_t KvBlockPool::TakeLocked() {
  if (!free_.empty()) {
    const int32_t id = free_.back();
    free_.pop_back();
    return id;
  }
  const int32_t id = cached_head_;  // the caller made sure there is one
  UnlinkCachedLocked(id);
  table_.erase(meta_[id].hash);
  meta_[id].published = false;
  return id;
}

absl::Status KvBlockPool::Allocate(absl::Span<Block> out) {
  absl::MutexLock lock(&mu_);
  const int64_t count = static_cast<int64_t>(out.size());
  if (max_blocks_ > 0 && count > max_blocks_ - used_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("KV block pool of ", max_blocks_, " blocks (", block_bytes_,
                     " bytes each) has ", max_blocks_ - used_, " available, ", count, " needed"));
  }
  const int64_t missing = count - static_cast<int64_t>(free_.size());
  if (missing > 0) {
    const int64_t headroom = max_blocks_ - static_cast<int64_t>(meta_.size());
    // Bounded: fill the budget before recycling cached prefixes; unbounded: recycle first.
    const int64_t grow = max_blocks_ > 0 ? std::min(missing, headroom) : missing - cached_;
    if (grow > 0) {
      absl::Status grown = GrowLocked(grow);
      if (!grown.ok()) return grown;
    }
  }
  for (Block& block : out) {
    const int32_t id = TakeLocked();
    meta_[id].refs = 1;
    ++used_;
    block = {id, meta_[id].data};
  }
  return absl::OkStatus();
}

void KvBlockPool::RefLocked(int32_t id) {
  Meta& m = meta_[id];
  if (m.refs == 0) {
    UnlinkCachedLocked(id);
    ++used_;
  } else if (m.refs == 1) {
    ++shared_;
  }
  ++m.refs;
}

void KvBlockPool::Unref(absl::Span<const int32_t> ids) {
  absl::MutexLock lock(&mu_);
  for (int32_t id : ids) {
    Meta& m = meta_[id];
    --m.refs;
    if (m.refs == 1) {
      --shared_;
    } else if (m.refs == 0) {
      --used_;
      if (m.published) {
        LinkCachedLocked(id);
      } else {
        free_.push_back(id);
      }
    }
  }
}

KvBlockPool::Block KvBlockPool::Lookup(uint64_t hash, uint64_t parent,
                                       absl::Span<const int32_t> block_tokens) {
  absl::MutexLock lock(&mu_);
  const auto it = table_.find(hash);
  if (it == table_.end() || block_tokens.size() != size_t{kKeyBlock}) return {};
  const Meta& m = meta_[it->second];
  if (m.parent != parent || !std::equal(block_tokens.begin(), block_tokens.end(), m.tokens)) {
    return {};  // a hash collision: not this prefix
  }
  RefLocked(it->second);
  return {it->second, m.data};
}

bool KvBlockPool::Publish(int32_t id, uint64_t hash, uint64_t parent,
                          absl::Span<const int32_t> block_tokens) {
  absl::MutexLock lock(&mu_);
  if (block_tokens.size() != size_t{kKeyBlock} || meta_[id].published) return false;
  if (!table_.emplace(hash, id).second) return false;
  Meta& m = meta_[id];
  m.published = true;
  m.hash = hash;
  m.parent = parent;
  std::copy(block_tokens.begin(), block_tokens.end(), m.tokens);
  return true;
}

}  // namespace tandem
