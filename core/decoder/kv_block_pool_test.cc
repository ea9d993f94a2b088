#include "core/decoder/kv_block_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <numeric>
#include <thread>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/decoder/kv_cache.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

constexpr KvBlockShape kShape{/*n_layers=*/2, /*n_kv_heads=*/3, /*head_dim=*/8};

std::unique_ptr<KvBlockPool> MakePool(int64_t max_blocks, KvType type = KvType::kF16) {
  absl::StatusOr<std::unique_ptr<KvBlockPool>> pool = KvBlockPool::Create(kShape, type, max_blocks);
  EXPECT_TRUE(pool.ok()) << pool.status();
  return pool.ok() ? *std::move(pool) : nullptr;
}

std::vector<int32_t> Tokens(int32_t first) {
  std::vector<int32_t> tokens(kKeyBlock);
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

void ExpectStats(const KvBlockPool& pool, int64_t used, int64_t shared, int64_t cached,
                 int64_t free) {
  const KvBlockPool::Stats s = pool.stats();
  EXPECT_EQ(s.used, used);
  EXPECT_EQ(s.shared, shared);
  EXPECT_EQ(s.cached, cached);
  EXPECT_EQ(s.free, free);
}

TEST(KvBlockPoolTest, CreateRejectsNonPositiveDimensionsAndANegativeBound) {
  struct Case {
    KvBlockShape shape;
    int64_t max_blocks;
  };
  for (const Case& c : {Case{{0, 3, 8}, 4}, Case{{2, 0, 8}, 4}, Case{{2, 3, 0}, 4},
                        Case{{-1, 3, 8}, 4}, Case{{2, 3, 8}, -1}}) {
    EXPECT_THAT(KvBlockPool::Create(c.shape, KvType::kF16, c.max_blocks).status(),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be positive")));
  }
}

// A block is K and V (and the i8 row scales) of 16 positions in every layer and head: the
// bytes a 16-position KvCache takes.
TEST(KvBlockPoolTest, BlockBytesCoverKeysValuesAndScalesOfSixteenPositions) {
  struct Case {
    KvType type;
    int64_t bytes;
  };
  for (const Case& c :
       {Case{KvType::kF32, 2 * 6 * 16 * 8 * 4}, Case{KvType::kF16, 2 * 6 * 16 * 8 * 2},
        Case{KvType::kI8, 2 * 6 * 16 * (8 + 4)}}) {
    EXPECT_EQ(KvBlockPool::BlockBytes(kShape, c.type), c.bytes) << KvTypeName(c.type);
    EXPECT_EQ(KvCache::BytesFor({2, 3, 8, 16}, c.type), c.bytes) << KvTypeName(c.type);
  }
}

// used / shared / cached / free through allocating, sharing by the prefix table, releasing.
TEST(KvBlockPoolTest, AccountingFollowsAllocateShareAndRelease) {
  std::unique_ptr<KvBlockPool> pool = MakePool(8);
  ASSERT_NE(pool, nullptr);
  ExpectStats(*pool, 0, 0, 0, 8);
  EXPECT_EQ(pool->available(), 8);
  KvBlockPool::Block blocks[3];
  ASSERT_OK(pool->Allocate(absl::MakeSpan(blocks)));
  ExpectStats(*pool, 3, 0, 0, 5);
  const std::vector<int32_t> t0 = Tokens(0), t1 = Tokens(16);
  const uint64_t h0 = KvBlockHash(0, t0), h1 = KvBlockHash(h0, t1);
  ASSERT_TRUE(pool->Publish(blocks[0].id, h0, 0, t0));
  ASSERT_TRUE(pool->Publish(blocks[1].id, h1, h0, t1));
  // A second cache adopts both published blocks: shared.
  const KvBlockPool::Block a0 = pool->Lookup(h0, 0, t0), a1 = pool->Lookup(h1, h0, t1);
  EXPECT_EQ(a0.id, blocks[0].id);
  EXPECT_EQ(a1.data, blocks[1].data);
  ExpectStats(*pool, 3, 2, 0, 5);
  // The first releases everything: the unpublished block is free, the others still used.
  pool->Unref({blocks[0].id, blocks[1].id, blocks[2].id});
  ExpectStats(*pool, 2, 0, 0, 6);
  // The second releases: both published blocks are cached, and count as free.
  pool->Unref({a0.id, a1.id});
  ExpectStats(*pool, 0, 0, 2, 8);
  EXPECT_EQ(pool->available(), 8);
  // Adopting a cached block uses it again.
  EXPECT_EQ(pool->Lookup(h1, h0, t1).id, blocks[1].id);
  ExpectStats(*pool, 1, 0, 1, 7);
}

TEST(KvBlockPoolTest, AllocateIsAllOrNothingWhenThePoolIsShort) {
  std::unique_ptr<KvBlockPool> pool = MakePool(4);
  ASSERT_NE(pool, nullptr);
  std::vector<KvBlockPool::Block> five(5), four(4), one(1);
  EXPECT_THAT(pool->Allocate(absl::MakeSpan(five)),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("pool of 4 blocks (3072 bytes each) has 4 available, 5 needed")));
  ExpectStats(*pool, 0, 0, 0, 4);
  EXPECT_EQ(five[0].id, -1);
  ASSERT_OK(pool->Allocate(absl::MakeSpan(four)));
  EXPECT_THAT(pool->Allocate(absl::MakeSpan(one)),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("has 0 available")));
  ExpectStats(*pool, 4, 0, 0, 0);
  // Four distinct, non-overlapping blocks.
  for (int i = 0; i < 4; ++i) {
    for (int j = i + 1; j < 4; ++j) {
      EXPECT_GE(std::abs(four[i].data - four[j].data), pool->block_bytes());
    }
  }
}

// The OS is asked for memory as blocks are first needed, in chunks capped by the bound: a
// bounded pool never holds more than max_blocks × block_bytes, a large bound is not mapped
// up front, and an unbounded pool grows.
TEST(KvBlockPoolTest, MemoryFromTheOsFollowsUseAndNeverExceedsTheBound) {
  for (int64_t bound : {1, 3, 7, 200}) {
    std::unique_ptr<KvBlockPool> pool = MakePool(bound, KvType::kF32);
    ASSERT_NE(pool, nullptr);
    EXPECT_EQ(pool->stats().allocated_bytes, 0);
    std::vector<KvBlockPool::Block> held;
    for (int64_t i = 0; i < bound; ++i) {
      KvBlockPool::Block block;
      ASSERT_OK(pool->Allocate(absl::MakeSpan(&block, 1)));
      std::memset(block.data, 0x5a, pool->block_bytes());  // the memory is usable
      held.push_back(block);
      EXPECT_LE(pool->stats().allocated_bytes, bound * pool->block_bytes()) << bound;
    }
    EXPECT_EQ(pool->stats().allocated_bytes, bound * pool->block_bytes()) << bound;
  }
  // 100000 blocks of 6144 bytes: one block in use maps one 8 MiB chunk, not 586 MiB.
  std::unique_ptr<KvBlockPool> big = MakePool(100000, KvType::kF32);
  ASSERT_NE(big, nullptr);
  KvBlockPool::Block block;
  ASSERT_OK(big->Allocate(absl::MakeSpan(&block, 1)));
  EXPECT_EQ(big->stats().allocated_bytes, (int64_t{8} << 20) / 6144 * 6144);
  // Unbounded: free is -1, available is unlimited, and it grows past one chunk.
  std::unique_ptr<KvBlockPool> unbounded = MakePool(0, KvType::kF32);
  ASSERT_NE(unbounded, nullptr);
  std::vector<KvBlockPool::Block> many(6000);
  ASSERT_OK(unbounded->Allocate(absl::MakeSpan(many)));
  ExpectStats(*unbounded, 6000, 0, 0, -1);
  EXPECT_EQ(unbounded->available(), std::numeric_limits<int64_t>::max());
  EXPECT_GE(unbounded->stats().allocated_bytes, 6000 * unbounded->block_bytes());
}

// Mapped memory becomes resident only where blocks are written (RSS follows use, nothing is
// zero-filled up front), for a pool and for a Create'd cache's private pool.
TEST(KvBlockPoolTest, MemoryIsResidentOnlyWhereBlocksAreWritten) {
  const int64_t page = sysconf(_SC_PAGESIZE);
  auto resident_pages = [&](const uint8_t* addr, int64_t bytes) {
    std::vector<unsigned char> pages((bytes + page - 1) / page);
    EXPECT_EQ(mincore(const_cast<uint8_t*>(addr), bytes, pages.data()), 0);
    int64_t n = 0;
    for (unsigned char p : pages) n += p & 1;
    return n;
  };
  std::unique_ptr<KvBlockPool> pool = MakePool(1000, KvType::kF32);
  ASSERT_NE(pool, nullptr);
  std::vector<KvBlockPool::Block> blocks(1000);
  ASSERT_OK(pool->Allocate(absl::MakeSpan(blocks)));  // ids in address order within a chunk
  const int64_t bytes = pool->block_bytes();
  EXPECT_EQ(resident_pages(blocks[0].data, 100 * bytes), 0);
  std::memset(blocks[0].data, 1, 10 * bytes);
  EXPECT_GE(resident_pages(blocks[0].data, 10 * bytes), 10 * bytes / page);
  // Far from the written blocks (over 2 MiB away, past any transparent huge page), nothing.
  EXPECT_EQ(resident_pages(blocks[600].data, 300 * bytes), 0);

  // A 2048-position cache of 32 layers × 5 heads × 64 f16: 80 MiB mapped, none resident.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> cache,
                       KvCache::Create({32, 5, 64, 2048}, KvType::kF16));
  std::vector<float> row(64, 1.0f);
  cache->WriteK(0, 0, 0, row.data());
  std::vector<float> back(64);
  cache->ReadK(31, 4, 2047, back.data());
  EXPECT_EQ(back[0], 0.0f);  // reads as zeros before it is written
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, rss = 0;
  statm >> size >> rss;
  EXPECT_LT(rss * page, cache->bytes()) << "the whole cache is resident";
}

// An unreferenced published block stays in the prefix table until a fresh block is needed
// and no free one is left; then it is recycled (least recently released first) and its hash
// forgotten.
TEST(KvBlockPoolTest, CachedBlocksServeLookupsUntilRecycledLeastRecentFirst) {
  std::unique_ptr<KvBlockPool> pool = MakePool(3);
  ASSERT_NE(pool, nullptr);
  KvBlockPool::Block blocks[3];
  ASSERT_OK(pool->Allocate(absl::MakeSpan(blocks)));
  const std::vector<int32_t> ta = Tokens(100), tb = Tokens(200);
  const uint64_t ha = KvBlockHash(0, ta), hb = KvBlockHash(0, tb);
  ASSERT_TRUE(pool->Publish(blocks[0].id, ha, 0, ta));
  ASSERT_TRUE(pool->Publish(blocks[1].id, hb, 0, tb));
  pool->Unref({blocks[0].id});  // a: released first
  pool->Unref({blocks[1].id});
  pool->Unref({blocks[2].id});  // unpublished: free
  ExpectStats(*pool, 0, 0, 2, 3);
  KvBlockPool::Block fresh[2];
  ASSERT_OK(pool->Allocate(absl::MakeSpan(fresh)));  // the free one, then a's
  EXPECT_EQ(fresh[0].id, blocks[2].id);
  EXPECT_EQ(fresh[1].id, blocks[0].id);
  ExpectStats(*pool, 2, 0, 1, 1);
  EXPECT_EQ(pool->Lookup(ha, 0, ta).id, -1);
  EXPECT_EQ(pool->Lookup(hb, 0, tb).id, blocks[1].id);
  ExpectStats(*pool, 3, 0, 0, 0);
}

// The table answers only for the exact parent and tokens (a colliding hash is a miss), and a
// hash is published once.
TEST(KvBlockPoolTest, LookupChecksParentAndTokensAndPublishRefusesADuplicate) {
  std::unique_ptr<KvBlockPool> pool = MakePool(4);
  ASSERT_NE(pool, nullptr);
  KvBlockPool::Block blocks[2];
  ASSERT_OK(pool->Allocate(absl::MakeSpan(blocks)));
  const std::vector<int32_t> t = Tokens(7);
  ASSERT_TRUE(pool->Publish(blocks[0].id, 42, 5, t));
  EXPECT_FALSE(pool->Publish(blocks[1].id, 42, 5, t));
  EXPECT_FALSE(pool->Publish(blocks[0].id, 43, 5, t));  // already published
  EXPECT_EQ(pool->Lookup(42, 6, t).id, -1);
  EXPECT_EQ(pool->Lookup(42, 5, Tokens(8)).id, -1);
  EXPECT_EQ(pool->Lookup(43, 5, t).id, -1);
  EXPECT_EQ(pool->Lookup(42, 5, t).id, blocks[0].id);
}

// The chain hash depends on the parent and on every token in order, with a fixed seed (the
// same value in every process).
TEST(KvBlockPoolTest, BlockHashChainsParentAndTokens) {
  const std::vector<int32_t> t = Tokens(0);
  std::vector<int32_t> swapped = t;
  std::swap(swapped[3], swapped[4]);
  std::vector<int32_t> changed = t;
  changed[15] = 1 << 30;
  const uint64_t h = KvBlockHash(0, t);
  EXPECT_EQ(h, KvBlockHash(0, Tokens(0)));
  EXPECT_NE(h, KvBlockHash(1, t));
  EXPECT_NE(h, KvBlockHash(0, swapped));
  EXPECT_NE(h, KvBlockHash(0, changed));
  EXPECT_NE(KvBlockHash(h, t), h);
  EXPECT_EQ(KvBlockHash(0, t), uint64_t{0xbe7cda5647ab70dcULL});
}

// Two threads allocating, publishing, adopting and releasing leave a consistent pool.
TEST(KvBlockPoolTest, ConcurrentUseKeepsTheCountersConsistent) {
  std::unique_ptr<KvBlockPool> pool = MakePool(64);
  ASSERT_NE(pool, nullptr);
  auto work = [&](int32_t seed) {
    for (int i = 0; i < 2000; ++i) {
      KvBlockPool::Block blocks[4];
      if (!pool->Allocate(absl::MakeSpan(blocks)).ok()) continue;
      const std::vector<int32_t> t = Tokens((seed + i) % 50);
      const uint64_t h = KvBlockHash(0, t);
      pool->Publish(blocks[0].id, h, 0, t);
      const KvBlockPool::Block adopted = pool->Lookup(h, 0, t);
      for (const KvBlockPool::Block& b : blocks) pool->Unref({b.id});
      if (adopted.id >= 0) pool->Unref({adopted.id});
    }
  };
  std::thread a(work, 0), b(work, 25);
  a.join();
  b.join();
  const KvBlockPool::Stats s = pool->stats();
  EXPECT_EQ(s.used, 0);
  EXPECT_EQ(s.shared, 0);
  EXPECT_EQ(s.free, 64);
  EXPECT_LE(s.cached, 50);
  EXPECT_LE(s.allocated_bytes, 64 * pool->block_bytes());
}

}  // namespace
}  // namespace tandem
