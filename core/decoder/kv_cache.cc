#include "core/decoder/kv_cache.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
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

int64_t KvCache::BytesFor(const KvCacheShape& shape, KvType type) {
  const double padded = std::ceil(double(shape.context_size) / kKeyBlock) * kKeyBlock;
  const double rows = double(shape.n_layers) * double(shape.n_kv_heads) * padded;
  const double per_row =
      double(shape.head_dim) * KvElementBytes(type) + (type == KvType::kI8 ? sizeof(float) : 0);
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
  const int64_t blocks = BlocksFor(shape.context_size);
  absl::StatusOr<std::unique_ptr<KvBlockPool>> pool =
      KvBlockPool::Create({shape.n_layers, shape.n_kv_heads, shape.head_dim}, type, blocks);
  if (!pool.ok()) return pool.status();
  KvBlockPool& ref = **pool;
  std::unique_ptr<KvCache> cache(new KvCache(ref, shape.context_size, *std::move(pool)));
  absl::Status taken = ref.Allocate(absl::MakeSpan(cache->scratch_));
  if (!taken.ok()) return taken;
  for (const KvBlockPool::Block& block : cache->scratch_) {
    cache->slots_.push_back({block.id, block.data});
  }
  return cache;
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
  return std::unique_ptr<KvCache>(new KvCache(pool, context_size, nullptr));
}

KvCache::KvCache(KvBlockPool& pool, int64_t context_size, std::unique_ptr<KvBlockPool> own_pool)
    : shape_{pool.shape().n_layers, pool.shape().n_kv_heads, pool.shape().head_dim, context_size},
      type_(pool.type()),
      pool_(pool),
      own_pool_(std::move(own_pool)),
      paged_(own_pool_ == nullptr),
      n_heads_(shape_.n_layers * shape_.n_kv_heads),
      region_bytes_(kKeyBlock * shape_.head_dim * KvElementBytes(type_)) {
  slots_.reserve(BlocksFor(context_size));
  scratch_.resize(BlocksFor(context_size));
}

KvCache::~KvCache() { Release(); }

int64_t KvCache::bytes() const {
  return paged_ ? pool_.block_bytes() * blocks_held() : BytesFor(shape_, type_);
}

void KvCache::ForgetHashesFrom(int64_t length) {
  for (int64_t b = length / kKeyBlock; b < blocks_held(); ++b) slots_[b].hashed = false;
}

void KvCache::Truncate(int64_t new_length) {
  length_ = new_length;
  if (!paged_) return;
  ForgetHashesFrom(new_length);
  const int64_t keep = BlocksFor(new_length);
  for (int64_t b = keep; b < blocks_held(); ++b) pool_.Unref({&slots_[b].id, 1});
  if (keep < blocks_held()) slots_.resize(keep);
}

void KvCache::SetLength(int64_t length) {
  if (length < length_) ForgetHashesFrom(length);
  length_ = length;
}

void KvCache::Release() {
  length_ = 0;
  if (!paged_) return;
  for (const Slot& slot : slots_) pool_.Unref({&slot.id, 1});
  slots_.clear();
}

int64_t KvCache::BlocksNeeded(int64_t positions) const {
  if (!paged_) return 0;
  const int64_t blocks = BlocksFor(std::min(positions, shape_.context_size));
  int64_t needed = std::max<int64_t>(0, blocks - blocks_held());
  for (int64_t b = length_ / kKeyBlock; b < std::min(blocks, blocks_held()); ++b) {
    needed += slots_[b].writable ? 0 : 1;
  }
  return needed;
}

absl::Status KvCache::Reserve(int64_t positions) {
  if (positions > shape_.context_size) {
    return absl::OutOfRangeError(absl::StrCat("KV cache reserve of ", positions,
                                              " positions is past the context of ",
                                              shape_.context_size));
  }
  const int64_t needed = BlocksNeeded(positions);
  if (needed == 0) return absl::OkStatus();
  absl::Span<KvBlockPool::Block> fresh(scratch_.data(), needed);
  absl::Status taken = pool_.Allocate(fresh);
  if (!taken.ok()) {
    return absl::ResourceExhaustedError(absl::StrCat("KV cache: positions [0, ", positions,
                                                     ") need ", needed,
                                                     " more blocks: ", taken.message()));
  }
  int64_t next = 0;
  const int64_t blocks = BlocksFor(positions);
  for (int64_t b = length_ / kKeyBlock; b < std::min(blocks, blocks_held()); ++b) {
    Slot& slot = slots_[b];
    if (slot.writable) continue;
    const KvBlockPool::Block copy = fresh[next++];
    // Positions below length() stay; the rest are about to be written.
    if (b * kKeyBlock < length_) std::memcpy(copy.data, slot.data, pool_.block_bytes());
    pool_.Unref({&slot.id, 1});
    slot = {copy.id, copy.data};
  }
  while (blocks_held() < blocks) {
    const KvBlockPool::Block block = fresh[next++];
    slots_.push_back({block.id, block.data});
  }
  return absl::OkStatus();
}

uint64_t KvCache::ParentHash(absl::Span<const int32_t> tokens, int64_t block) const {
  // The latest own hash of a block wholly below length(), then the tokens from there.
  int64_t known = std::min({block, blocks_held(), length_ / kKeyBlock});
  while (known > 0 && !slots_[known - 1].hashed) --known;
  uint64_t parent = known > 0 ? slots_[known - 1].hash : 0;
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
  int64_t b = first;
  if ((b + 1) * kKeyBlock > std::min(n - 1, shape_.context_size)) return 0;
  uint64_t parent = ParentHash(tokens, b);
  // Block b is adoptable if it is full, inside the context and not the final token's.
  while ((b + 1) * kKeyBlock <= std::min(n - 1, shape_.context_size)) {
    const absl::Span<const int32_t> block_tokens = tokens.subspan(b * kKeyBlock, kKeyBlock);
    const uint64_t hash = KvBlockHash(parent, block_tokens);
    const KvBlockPool::Block found = pool_.Lookup(hash, parent, block_tokens);
    if (found.id < 0) break;
    const Slot adopted{found.id, found.data, hash, /*hashed=*/true, /*writable=*/false};
    if (b < blocks_held()) {
      pool_.Unref({&slots_[b].id, 1});
      slots_[b] = adopted;
    } else {
      slots_.push_back(adopted);
    }
    parent = hash;
    ++b;
  }
  length_ = b * kKeyBlock;
  return (b - first) * kKeyBlock;
}

void KvCache::PublishFullBlocks(absl::Span<const int32_t> tokens) {
  if (!paged_) return;
  const int64_t full = std::min(length_, static_cast<int64_t>(tokens.size())) / kKeyBlock;
  for (int64_t b = 0; b < std::min(full, blocks_held()); ++b) {
    Slot& slot = slots_[b];
    if (slot.hashed) continue;
    const uint64_t parent = b == 0 ? 0 : slots_[b - 1].hash;  // hashed: done in order
    const absl::Span<const int32_t> block_tokens = tokens.subspan(b * kKeyBlock, kKeyBlock);
    slot.hash = KvBlockHash(parent, block_tokens);
    slot.hashed = true;
    if (pool_.Publish(slot.id, slot.hash, parent, block_tokens)) slot.writable = false;
  }
}

uint8_t* KvCache::WritableBlock(int64_t position) const {
  const int64_t block = position / kKeyBlock;
  assert(position >= 0 && block < blocks_held() && slots_[block].writable);
  return slots_[block].data;
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
  uint8_t* block = WritableBlock(position);
  const int64_t head = Head(layer, kv_head), lane = position % kKeyBlock;
  const float scale = Store(values, block + head * region_bytes_, lane, kKeyBlock);
  if (type_ == KvType::kI8) {
    reinterpret_cast<float*>(block + 2 * n_heads_ * region_bytes_)[head * kKeyBlock + lane] = scale;
  }
}

void KvCache::WriteV(int64_t layer, int64_t kv_head, int64_t position, const float* values) {
  uint8_t* block = WritableBlock(position);
  const int64_t head = Head(layer, kv_head), lane = position % kKeyBlock;
  const float scale =
      Store(values, block + (n_heads_ + head) * region_bytes_, lane * shape_.head_dim, 1);
  if (type_ == KvType::kI8) {
    reinterpret_cast<float*>(
        block + 2 * n_heads_ * region_bytes_)[(n_heads_ + head) * kKeyBlock + lane] = scale;
  }
}

void KvCache::KeyScores(int64_t layer, int64_t kv_head, const float* q, int64_t q_stride, int n_q,
                        int64_t positions, float scale, float* scores,
                        int64_t scores_stride) const {
  assert(BlocksFor(positions) <= blocks_held());
  const int64_t head = Head(layer, kv_head);
  const int64_t dim = shape_.head_dim;
  float partial[4 * kKeyBlock];  // a last, partial block for up to 4 queries at a time
  for (int j0 = 0; j0 < n_q; j0 += 4) {
    const int group = std::min(4, n_q - j0);
    const float* qj = q + j0 * q_stride;
    float* sj = scores + j0 * scores_stride;
    for (int64_t first = 0; first < positions; first += kKeyBlock) {
      const int64_t count = std::min(kKeyBlock, positions - first);
      const bool whole = count == kKeyBlock;
      float* out = whole ? sj + first : partial;
      const int64_t out_stride = whole ? scores_stride : kKeyBlock;
      const int64_t block = first / kKeyBlock;
      const uint8_t* keys = KeyRegion(block, head);
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
          KeyBlockScoresI8(qj, q_stride, group, KeyScales(block, head),
                           reinterpret_cast<const int8_t*>(keys), dim, scale, out, out_stride);
          break;
      }
      if (!whole) {
        for (int j = 0; j < group; ++j) {
          std::copy(out + j * kKeyBlock, out + j * kKeyBlock + count,
                    sj + j * scores_stride + first);
        }
      }
    }
  }
}

void KvCache::ValueSum(int64_t layer, int64_t kv_head, const float* weights, int64_t weights_stride,
                       int n_q, int64_t positions, float* out, int64_t out_stride) const {
  const int64_t blocks = BlocksFor(positions);
  assert(blocks <= blocks_held());
  const int64_t head = Head(layer, kv_head);
  const int64_t dim = shape_.head_dim;
  auto rows = [&](int64_t b) { return ValueRegion(b, head); };
  switch (type_) {
    case KvType::kF32:
      return WithBlockAddresses<float>(blocks, rows, [&](const float* const* v) {
        WeightedSumBlocksF32(weights, weights_stride, n_q, v, positions, dim, out, out_stride);
      });
    case KvType::kF16:
      return WithBlockAddresses<uint16_t>(blocks, rows, [&](const uint16_t* const* v) {
        WeightedSumBlocksF16(weights, weights_stride, n_q, v, positions, dim, out, out_stride);
      });
    case KvType::kI8: {
      auto scales = [&](int64_t b) {
        return reinterpret_cast<const uint8_t*>(ValueScales(b, head));
      };
      return WithBlockAddresses<int8_t>(blocks, rows, [&](const int8_t* const* v) {
        WithBlockAddresses<float>(blocks, scales, [&](const float* const* s) {
          WeightedSumBlocksI8(weights, weights_stride, n_q, s, v, positions, dim, out, out_stride);
        });
      });
    }
  }
}

void KvCache::ReadK(int64_t layer, int64_t kv_head, int64_t position, float* out) const {
  const int64_t block = position / kKeyBlock, lane = position % kKeyBlock;
  const int64_t head = Head(layer, kv_head);
  const float scale = type_ == KvType::kI8 ? KeyScales(block, head)[lane] : 1.0f;
  const uint8_t* keys = KeyRegion(block, head);
  for (int64_t i = 0; i < shape_.head_dim; ++i) {
    out[i] = Load(keys, i * kKeyBlock + lane) * scale;
  }
}

void KvCache::ReadV(int64_t layer, int64_t kv_head, int64_t position, float* out) const {
  const int64_t block = position / kKeyBlock, lane = position % kKeyBlock;
  const int64_t head = Head(layer, kv_head);
  const float scale = type_ == KvType::kI8 ? ValueScales(block, head)[lane] : 1.0f;
  const uint8_t* values = ValueRegion(block, head);
  for (int64_t i = 0; i < shape_.head_dim; ++i) {
    out[i] = Load(values, lane * shape_.head_dim + i) * scale;
  }
}

}  // namespace tandem
