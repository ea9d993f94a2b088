// KvMemory: a worker's KV budget split between the global layers' pool and the sliding
// layers' rings so both hold the same number of full-context sessions; and the rings of
// KvCache themselves (bounded, resumable only within their slack, all-or-nothing reserves).
#include "core/decoder/kv_memory.h"

#include <iostream>
#include <memory>

#include "core/base/status_matchers.h"
#include "core/decoder/kv_cache.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

// gemma2-like: layers 0 and 2 slide (window 16), layer 1 is global; 2 KV heads of 64.
constexpr KvCacheShape kShape{3, 2, 64, 4096, 16, 2};
// One layer's block: K and V, 2 heads, 16 positions, 64 dims, f16.
constexpr int64_t kLayerBlock = 2 * 2 * 16 * 64 * 2;
// A session: 256 global blocks of one layer; a ring of 39 blocks of two layers.
constexpr int64_t kSessionBytes = 256 * kLayerBlock + 39 * 2 * kLayerBlock;

TEST(KvMemoryTest, ABudgetHoldsTheSameNumberOfFullSessionsInBothPools) {
  EXPECT_EQ(kShape.sliding_layers(), 2);
  EXPECT_EQ(KvCache::RingBlocks(kShape), 39);  // 16 + 64 slack + a 512-row pass, rounded
  EXPECT_EQ(KvCache::BytesFor(kShape, KvType::kF16), kSessionBytes);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvMemory> memory,
                       KvMemory::Create(kShape, KvType::kF16, 2 * kSessionBytes));
  ASSERT_NE(memory->global(), nullptr);
  ASSERT_NE(memory->sliding(), nullptr);
  EXPECT_EQ(memory->global()->block_bytes(), kLayerBlock);
  EXPECT_EQ(memory->sliding()->block_bytes(), 2 * kLayerBlock);
  EXPECT_EQ(memory->global()->max_blocks(), 2 * 256);
  EXPECT_EQ(memory->sliding()->max_blocks(), 2 * 39);
  EXPECT_TRUE(memory->CanAllocate({512, 78}));
  EXPECT_FALSE(memory->CanAllocate({513, 0}));
  EXPECT_FALSE(memory->CanAllocate({0, 79}));
  EXPECT_EQ(memory->stats().free, 512 + 78);
}

TEST(KvMemoryTest, WithoutSlidingLayersOnePoolTakesTheWholeBudget) {
  KvCacheShape shape = kShape;
  shape.sliding_window = 0;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvMemory> memory,
                       KvMemory::Create(shape, KvType::kF16, 100 * 3 * kLayerBlock + 5));
  EXPECT_EQ(memory->sliding(), nullptr);
  EXPECT_EQ(memory->global()->max_blocks(), 100);
  EXPECT_FALSE(memory->CanAllocate({0, 1}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvMemory> unbounded,
                       KvMemory::Create(shape, KvType::kF16, 0));
  EXPECT_EQ(unbounded->stats().free, -1);
}

TEST(KvMemoryTest, BadShapesAndBudgetsThatHoldNoBlockAreRefused) {
  EXPECT_THAT(KvMemory::Create(kShape, KvType::kF16, 10000).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("holds no block")));
  KvCacheShape bad = kShape;
  bad.context_size = 0;
  EXPECT_THAT(KvMemory::Create(bad, KvType::kF16, 0).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("context 0")));
}

// Positions written one pass at a time (Reserve, then SetLength, as the decoder does).
void Advance(KvCache& cache, int64_t to, int64_t step) {
  for (int64_t p = cache.length(); p < to; p += step) {
    const int64_t end = std::min(to, p + step);
    ASSERT_OK(cache.Reserve(end));
    cache.SetLength(end);
  }
}

TEST(KvMemoryTest, RingsStayBoundedAndResumeOnlyWithinTheirSlack) {
  for (bool paged : {false, true}) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvMemory> memory,
                         KvMemory::Create(kShape, KvType::kF16, 0));
    ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<KvCache> cache,
        paged ? KvCache::CreatePaged(*memory, 4096) : KvCache::Create(kShape, KvType::kF16));
    ASSERT_NO_FATAL_FAILURE(Advance(*cache, 1000, paged ? 7 : 100));
    // Kept: positions from 1000 - 15 - 64 = 921 on, i.e. blocks 57..62.
    EXPECT_EQ(cache->sliding_blocks_held(), 6) << paged;
    EXPECT_EQ(cache->blocks_held(), (paged ? 63 : 256) + 6) << paged;
    EXPECT_EQ(cache->resume_floor(), 57 * 16 + 15);
    EXPECT_EQ(cache->ResumePoint(1000 - KvCache::kRingSlack), 1000 - KvCache::kRingSlack);
    EXPECT_EQ(cache->ResumePoint(900), 0);
    if (paged) {
      EXPECT_EQ(memory->bytes_in_use(), 63 * kLayerBlock + 6 * 2 * kLayerBlock);
      EXPECT_EQ(cache->bytes(), memory->bytes_in_use());
    } else {
      EXPECT_EQ(cache->bytes(), kSessionBytes);
    }
    // Back within the slack, on again: still bounded. Back to 0: everything anew.
    cache->Truncate(1000 - KvCache::kRingSlack);
    ASSERT_NO_FATAL_FAILURE(Advance(*cache, 2000, 16));
    EXPECT_LE(cache->sliding_blocks_held(), 6);
    cache->Truncate(0);
    EXPECT_EQ(cache->resume_floor(), 0);
    EXPECT_EQ(cache->sliding_blocks_held(), 0);
    ASSERT_NO_FATAL_FAILURE(Advance(*cache, 40, 40));
    EXPECT_EQ(cache->sliding_blocks_held(), 3);
    cache->Release();
    EXPECT_EQ(cache->sliding_blocks_held(), 0);
  }
}

TEST(KvMemoryTest, AReserveTheRingPoolCannotSupplyTakesNothing) {
  // One session's worth: 256 global blocks, 39 ring blocks.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvMemory> memory,
                       KvMemory::Create(kShape, KvType::kF16, kSessionBytes));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> cache, KvCache::CreatePaged(*memory, 4096));
  // 1024 positions in one pass: 64 blocks of each kind, more than the ring pool has.
  EXPECT_EQ(cache->Demand(1024).global, 64);
  EXPECT_EQ(cache->Demand(1024).sliding, 64);
  EXPECT_THAT(cache->Reserve(1024),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("sliding-layer")));
  EXPECT_EQ(memory->stats().used, 0);
  EXPECT_EQ(cache->blocks_held(), 0);
  // Passes of 512 rows fit: the ring drops what it no longer needs between them.
  ASSERT_NO_FATAL_FAILURE(Advance(*cache, 4096, 512));
  EXPECT_EQ(memory->global()->stats().used, 256);
  EXPECT_LE(memory->sliding()->stats().used, 39);
}

// What a full context costs for the shapes of two real models (f16): Gemma 2 2B (26 layers,
// every other one sliding over 4096, 4 KV heads of 256, context 8192) and Gemma 3 1B (26
// layers, 5 of every 6 sliding over 512, 1 KV head of 256, context 32768).
TEST(KvMemoryTest, RealShapesPayForTheWindowOnlyOnSlidingLayers) {
  struct Case {
    const char* name;
    KvCacheShape shape;
    int64_t ring_bytes;  // whole context, ring
  };
  const int64_t gemma2_layer = 2 * 4 * 256 * 2, gemma3_layer = 2 * 1 * 256 * 2;  // per position
  const Case cases[] = {
      // Ring: min(512 blocks, ceil((4096 + 64 + 512) / 16) + 2 = 294 blocks).
      {"gemma-2-2b", {26, 4, 256, 8192, 4096, 2}, (13 * 8192 + 13 * 294 * 16) * gemma2_layer},
      // Global layers 5, 11, 17, 23; ring: ceil((512 + 64 + 512) / 16) + 2 = 70 blocks.
      {"gemma-3-1b", {26, 1, 256, 32768, 512, 6}, (4 * 32768 + 22 * 70 * 16) * gemma3_layer},
  };
  for (const Case& c : cases) {
    KvCacheShape every = c.shape;
    every.sliding_window = 0;
    const int64_t full = KvCache::BytesFor(every, KvType::kF16);
    EXPECT_EQ(KvCache::BytesFor(c.shape, KvType::kF16), c.ring_bytes) << c.name;
    std::cout << c.name << ", f16, " << c.shape.context_size << " positions: every position kept "
              << full << " bytes, sliding layers in rings " << c.ring_bytes << " bytes ("
              << 100.0 * c.ring_bytes / full << " %)\n";
  }
}

}  // namespace
}  // namespace tandem
