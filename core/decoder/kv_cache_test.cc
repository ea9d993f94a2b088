#include "core/decoder/kv_cache.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "core/base/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

struct Filled {
  std::unique_ptr<KvCache> cache;
  // [layer][head][position] rows as written
  std::vector<std::vector<std::vector<std::vector<float>>>> rows;
};

// Writes random keys and values for every (layer, head, position) of a cache whose context
// is not a multiple of the key block.
void Fill(KvType type, int64_t head_dim, Filled* out) {
  const KvCacheShape shape{/*n_layers=*/2, /*n_kv_heads=*/3, head_dim, /*context_size=*/37};
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> cache, KvCache::Create(shape, type));
  Filled& f = *out;
  f.cache = std::move(cache);
  std::mt19937 rng(static_cast<uint32_t>(head_dim));
  std::normal_distribution<float> dist(0.0f, 1.0f);
  f.rows.assign(2, std::vector<std::vector<std::vector<float>>>(3));
  for (int64_t layer = 0; layer < 2; ++layer) {
    for (int64_t head = 0; head < 3; ++head) {
      for (int64_t p = 0; p < 37; ++p) {
        std::vector<float> row(head_dim);
        for (float& v : row) v = dist(rng);
        f.cache->WriteK(layer, head, p, row.data());
        f.cache->WriteV(layer, head, p, row.data());
        f.rows[layer][head].push_back(row);
      }
    }
  }
}

// Stored rows read back within the type's rounding: exact for f32, half an f16 ulp (or of
// the subnormal step) for f16,
// max|x| / 254 for i8.
TEST(KvCacheTest, RowsReadBackInEveryLayout) {
  for (KvType type : {KvType::kF32, KvType::kF16, KvType::kI8}) {
    for (int64_t head_dim : {8, 64, 80}) {
      Filled f;
      ASSERT_NO_FATAL_FAILURE(Fill(type, head_dim, &f));
      std::vector<float> k(head_dim), v(head_dim);
      for (int64_t layer = 0; layer < 2; ++layer) {
        for (int64_t head = 0; head < 3; ++head) {
          for (int64_t p = 0; p < 37; ++p) {
            const std::vector<float>& row = f.rows[layer][head][p];
            float amax = 0;
            for (float x : row) amax = std::max(amax, std::fabs(x));
            f.cache->ReadK(layer, head, p, k.data());
            f.cache->ReadV(layer, head, p, v.data());
            for (int64_t i = 0; i < head_dim; ++i) {
              const float tolerance = type == KvType::kF32   ? 0.0f
                                      : type == KvType::kF16 ? std::fabs(row[i]) / 2048 + 3e-8f
                                                             : amax / 254 * 1.0001f;
              ASSERT_NEAR(k[i], row[i], tolerance) << KvTypeName(type) << " p " << p;
              ASSERT_NEAR(v[i], row[i], tolerance) << KvTypeName(type) << " p " << p;
            }
          }
        }
      }
    }
  }
}

// Scores and weighted sums over any number of positions (whole key blocks and partial ones)
// equal the sums over the rows read back, and only the named head's rows take part.
TEST(KvCacheTest, ScoresAndValueSumsCoverExactlyThePositionsAsked) {
  for (KvType type : {KvType::kF32, KvType::kF16, KvType::kI8}) {
    const int64_t head_dim = 24;
    Filled f;
    ASSERT_NO_FATAL_FAILURE(Fill(type, head_dim, &f));
    std::vector<float> q(head_dim), weights(37);
    for (int64_t i = 0; i < head_dim; ++i) q[i] = 0.1f * static_cast<float>(i - 7);
    for (int64_t p = 0; p < 37; ++p) weights[p] = 1.0f / static_cast<float>(p + 1);
    for (int64_t positions : {1, 15, 16, 17, 32, 37}) {
      std::vector<float> scores(37, NAN), out(head_dim), row(head_dim);
      f.cache->KeyScores(1, 2, q.data(), head_dim, 1, 0, positions, 0.5f, scores.data(), 37);
      f.cache->ValueSum(1, 2, weights.data(), 37, 1, 0, positions, out.data(), head_dim);
      std::vector<double> expected_out(head_dim, 0.0);
      for (int64_t p = 0; p < positions; ++p) {
        f.cache->ReadK(1, 2, p, row.data());
        double dot = 0;
        for (int64_t i = 0; i < head_dim; ++i) dot += double(q[i]) * row[i];
        EXPECT_NEAR(scores[p], 0.5 * dot, 1e-4) << KvTypeName(type) << " p " << p;
        f.cache->ReadV(1, 2, p, row.data());
        for (int64_t i = 0; i < head_dim; ++i) expected_out[i] += double(weights[p]) * row[i];
      }
      for (int64_t p = positions; p < 37; ++p) EXPECT_TRUE(std::isnan(scores[p])) << p;
      for (int64_t i = 0; i < head_dim; ++i) {
        EXPECT_NEAR(out[i], expected_out[i], 1e-4) << KvTypeName(type) << " " << positions;
      }
    }
  }
}

TEST(KvCacheTest, RejectsNonPositiveShapes) {
  EXPECT_THAT(KvCache::Create(KvCacheShape{2, 3, 0, 37}, KvType::kF16).status(),
              testing::StatusIs(absl::StatusCode::kInvalidArgument));
}

// ---- Paged caches: blocks from a shared KvBlockPool. ----

constexpr int64_t kLayers = 2, kHeads = 3;

// The row written at (layer, head, position) under `seed`: the same values every call.
std::vector<float> RowFor(int64_t dim, int64_t layer, int64_t head, int64_t position,
                          uint32_t seed) {
  std::mt19937 rng(seed * 1000003u + static_cast<uint32_t>((layer * 7 + head) * 4099 + position));
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> row(dim);
  for (float& v : row) v = dist(rng);
  return row;
}

void WriteRows(KvCache& cache, int64_t from, int64_t to, uint32_t seed) {
  const int64_t dim = cache.shape().head_dim;
  for (int64_t p = from; p < to; ++p) {
    for (int64_t layer = 0; layer < kLayers; ++layer) {
      for (int64_t head = 0; head < kHeads; ++head) {
        const std::vector<float> k = RowFor(dim, layer, head, p, seed);
        const std::vector<float> v = RowFor(dim, layer, head, p, seed + 1);
        cache.WriteK(layer, head, p, k.data());
        cache.WriteV(layer, head, p, v.data());
      }
    }
  }
  cache.SetLength(std::max(cache.length(), to));
}

// The rows of `a` and `b` at [from, to) are bit-identical, keys and values, every head.
void ExpectSameRows(const KvCache& a, const KvCache& b, int64_t from, int64_t to) {
  const int64_t dim = a.shape().head_dim;
  std::vector<float> ra(dim), rb(dim);
  for (int64_t p = from; p < to; ++p) {
    for (int64_t layer = 0; layer < kLayers; ++layer) {
      for (int64_t head = 0; head < kHeads; ++head) {
        a.ReadK(layer, head, p, ra.data());
        b.ReadK(layer, head, p, rb.data());
        ASSERT_EQ(0, std::memcmp(ra.data(), rb.data(), sizeof(float) * dim)) << "K " << p;
        a.ReadV(layer, head, p, ra.data());
        b.ReadV(layer, head, p, rb.data());
        ASSERT_EQ(0, std::memcmp(ra.data(), rb.data(), sizeof(float) * dim)) << "V " << p;
      }
    }
  }
}

absl::StatusOr<std::unique_ptr<KvBlockPool>> MakePool(int64_t head_dim, KvType type,
                                                      int64_t max_blocks) {
  return KvBlockPool::Create({kLayers, kHeads, head_dim}, type, max_blocks);
}

absl::StatusOr<std::unique_ptr<KvCache>> MakePaged(KvBlockPool& pool, int64_t context) {
  return KvCache::CreatePaged(pool, context);
}

std::vector<int32_t> Prompt(int64_t n, int32_t first = 1000) {
  std::vector<int32_t> tokens(n);
  std::iota(tokens.begin(), tokens.end(), first);
  return tokens;
}

// A paged cache, its blocks interleaved in memory with another cache's, stores and reads
// exactly what a Create'd cache does: rows, key scores and value sums bit for bit, every
// type, whole and partial blocks, groups of queries.
TEST(KvCacheTest, PagedCacheIsBitIdenticalToACreatedOne) {
  for (KvType type : {KvType::kF32, KvType::kF16, KvType::kI8}) {
    for (int64_t dim : {24, 64}) {
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvBlockPool> pool, MakePool(dim, type, 0));
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> created,
                           KvCache::Create({kLayers, kHeads, dim, 70}, type));
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> paged, MakePaged(*pool, 70));
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> other, MakePaged(*pool, 70));
      for (int64_t end = 16; end < 70 + 16; end += 16) {  // alternate blocks between the two
        ASSERT_OK(paged->Reserve(std::min<int64_t>(end, 70)));
        ASSERT_OK(other->Reserve(std::min<int64_t>(end, 70)));
      }
      WriteRows(*created, 0, 70, 5);
      WriteRows(*paged, 0, 70, 5);
      ASSERT_NO_FATAL_FAILURE(ExpectSameRows(*created, *paged, 0, 70));
      const int n_q = 5;
      std::vector<float> q(n_q * dim), weights(n_q * 70);
      std::mt19937 rng(static_cast<uint32_t>(dim));
      std::normal_distribution<float> dist(0.0f, 1.0f);
      for (float& x : q) x = dist(rng);
      for (float& x : weights) x = dist(rng);
      for (int64_t positions : {1, 15, 16, 17, 33, 48, 70}) {
        for (int group : {1, 3, 5}) {
          std::vector<float> sa(n_q * 70, 0), sb(n_q * 70, 0), va(n_q * dim), vb(n_q * dim);
          created->KeyScores(1, 2, q.data(), dim, group, 0, positions, 0.25f, sa.data(), 70);
          paged->KeyScores(1, 2, q.data(), dim, group, 0, positions, 0.25f, sb.data(), 70);
          EXPECT_EQ(0, std::memcmp(sa.data(), sb.data(), sizeof(float) * sa.size()))
              << KvTypeName(type) << " " << positions << " " << group;
          created->ValueSum(1, 2, weights.data(), 70, group, 0, positions, va.data(), dim);
          paged->ValueSum(1, 2, weights.data(), 70, group, 0, positions, vb.data(), dim);
          EXPECT_EQ(0, std::memcmp(va.data(), vb.data(), sizeof(float) * group * dim))
              << KvTypeName(type) << " " << positions << " " << group;
        }
      }
    }
  }
}

// A Create'd cache holds its whole context for its life; a paged one holds what it reserved,
// and Truncate / Release give blocks back.
TEST(KvCacheTest, BytesAndBlocksHeldFollowUsage) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> created,
                       KvCache::Create({kLayers, kHeads, 8, 37}, KvType::kF16));
  const int64_t block = KvBlockPool::BlockBytes({kLayers, kHeads, 8}, KvType::kF16);
  EXPECT_EQ(created->blocks_held(), 3);
  EXPECT_EQ(created->bytes(), KvCache::BytesFor({kLayers, kHeads, 8, 37}, KvType::kF16));
  EXPECT_EQ(created->bytes(), 3 * block);
  created->SetLength(37);
  created->Truncate(3);
  created->Release();
  EXPECT_EQ(created->blocks_held(), 3);
  EXPECT_EQ(created->BlocksNeeded(37), 0);
  EXPECT_OK(created->Reserve(37));

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvBlockPool> pool, MakePool(8, KvType::kF16, 0));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> paged, MakePaged(*pool, 37));
  struct Step {
    const char* what;
    std::function<void()> act;
    int64_t blocks;
  };
  const Step steps[] = {
      {"created", [] {}, 0},
      {"reserve 1", [&] { ASSERT_OK(paged->Reserve(1)); }, 1},
      {"reserve 17", [&] { ASSERT_OK(paged->Reserve(17)); }, 2},
      {"reserve 17 again", [&] { ASSERT_OK(paged->Reserve(17)); }, 2},
      {"reserve 37", [&] { ASSERT_OK(paged->Reserve(37)); }, 3},
      {"write 20, truncate 17",
       [&] {
         WriteRows(*paged, 0, 20, 1);
         paged->Truncate(17);
       },
       2},
      {"truncate 16", [&] { paged->Truncate(16); }, 1},
      {"truncate 0", [&] { paged->Truncate(0); }, 0},
      {"reserve 33", [&] { ASSERT_OK(paged->Reserve(33)); }, 3},
      {"release", [&] { paged->Release(); }, 0},
  };
  for (const Step& step : steps) {
    step.act();
    EXPECT_EQ(paged->blocks_held(), step.blocks) << step.what;
    EXPECT_EQ(paged->bytes(), step.blocks * block) << step.what;
    EXPECT_EQ(pool->stats().used, step.blocks) << step.what;
  }
  EXPECT_EQ(paged->length(), 0);
}

// Reserve takes all the blocks it needs or none, naming positions, blocks and the pool's
// size; past the context it is kOutOfRange.
TEST(KvCacheTest, ReserveBeyondThePoolIsResourceExhaustedAndChangesNothing) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvBlockPool> pool, MakePool(8, KvType::kF16, 3));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> a, MakePaged(*pool, 64));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> b, MakePaged(*pool, 64));
  ASSERT_OK(a->Reserve(20));
  EXPECT_EQ(b->BlocksNeeded(40), 3);
  EXPECT_THAT(b->Reserve(40),
              testing::StatusIs(absl::StatusCode::kResourceExhausted,
                                ::testing::AllOf(::testing::HasSubstr("positions [0, 40) need 3"),
                                                 ::testing::HasSubstr("pool of 3 blocks"),
                                                 ::testing::HasSubstr("has 1 available"))));
  EXPECT_EQ(b->blocks_held(), 0);
  EXPECT_EQ(pool->stats().used, 2);
  EXPECT_THAT(a->Reserve(65), testing::StatusIs(absl::StatusCode::kOutOfRange,
                                                ::testing::HasSubstr("context of 64")));
  EXPECT_EQ(a->blocks_held(), 2);
  ASSERT_OK(b->Reserve(16));
  EXPECT_EQ(pool->available(), 0);
}

// Published prefix blocks of cache a, adopted by b: b's tokens decide how many are taken —
// only full blocks that match, never the one holding b's final token.
TEST(KvCacheTest, AdoptCachedPrefixTakesExactlyTheMatchingFullBlocksBeforeTheLastToken) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvBlockPool> pool, MakePool(8, KvType::kF16, 0));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> a, MakePaged(*pool, 128));
  const std::vector<int32_t> prompt = Prompt(52);
  ASSERT_OK(a->Reserve(52));
  WriteRows(*a, 0, 52, 3);
  a->PublishFullBlocks(prompt);  // blocks 0, 1, 2; 48..51 is not full
  std::vector<int32_t> changed = Prompt(100);
  changed[20] = 7;
  struct Case {
    const char* what;
    std::vector<int32_t> tokens;
    int64_t context;
    int64_t adopted;
  };
  const Case cases[] = {
      {"the same 52 tokens", prompt, 128, 48},
      {"49 tokens", Prompt(49), 128, 48},
      {"48 tokens: the last block holds the final token", Prompt(48), 128, 32},
      {"47 tokens", Prompt(47), 128, 32},
      {"17 tokens", Prompt(17), 128, 16},
      {"16 tokens", Prompt(16), 128, 0},
      {"100 tokens, only 3 blocks published", Prompt(100), 128, 48},
      {"token 20 differs", changed, 128, 16},
      {"another prompt", Prompt(60, 5), 128, 0},
      {"a context of 40", prompt, 40, 32},
      {"no tokens", {}, 128, 0},
  };
  for (const Case& c : cases) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> b, MakePaged(*pool, c.context));
    EXPECT_EQ(b->AdoptCachedPrefix(c.tokens), c.adopted) << c.what;
    EXPECT_EQ(b->length(), c.adopted) << c.what;
    EXPECT_EQ(b->blocks_held(), c.adopted / 16) << c.what;
    ASSERT_NO_FATAL_FAILURE(ExpectSameRows(*a, *b, 0, c.adopted)) << c.what;
  }
  // From a length that is not a multiple of 16: nothing; from 16: the rest.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> c, MakePaged(*pool, 128));
  ASSERT_OK(c->Reserve(5));
  WriteRows(*c, 0, 5, 3);
  EXPECT_EQ(c->AdoptCachedPrefix(prompt), 0);
  EXPECT_EQ(c->length(), 5);
  c->Truncate(0);
  ASSERT_OK(c->Reserve(16));
  WriteRows(*c, 0, 16, 3);
  EXPECT_EQ(c->AdoptCachedPrefix(prompt), 32);
  EXPECT_EQ(c->length(), 48);
  // A Create'd cache neither publishes nor adopts.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> created,
                       KvCache::Create({kLayers, kHeads, 8, 128}, KvType::kF16));
  EXPECT_EQ(created->AdoptCachedPrefix(prompt), 0);
}

// Two caches share a's published blocks; b rolls back into the second one and writes there:
// it gets a private copy of the positions it keeps, and a's rows stay as they were.
TEST(KvCacheTest, CopyOnWriteAfterTruncateIntoASharedBlockKeepsTheOtherCachesRows) {
  for (KvType type : {KvType::kF32, KvType::kF16, KvType::kI8}) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvBlockPool> pool, MakePool(16, type, 0));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> a, MakePaged(*pool, 64));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> b, MakePaged(*pool, 64));
    const std::vector<int32_t> prompt = Prompt(40);
    ASSERT_OK(a->Reserve(40));
    WriteRows(*a, 0, 40, 11);
    a->PublishFullBlocks(prompt);
    ASSERT_EQ(b->AdoptCachedPrefix(prompt), 32);
    EXPECT_EQ(pool->stats().shared, 2);
    b->Truncate(20);
    EXPECT_EQ(b->blocks_held(), 2);
    EXPECT_EQ(b->BlocksNeeded(21), 1);  // the copy of block 1
    EXPECT_EQ(b->BlocksNeeded(40), 2);
    ASSERT_OK(b->Reserve(40));
    EXPECT_EQ(b->BlocksNeeded(40), 0);
    EXPECT_EQ(pool->stats().shared, 1);  // block 0 only
    ASSERT_NO_FATAL_FAILURE(ExpectSameRows(*a, *b, 0, 20));
    WriteRows(*b, 20, 40, 99);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> fresh, MakePaged(*pool, 64));
    ASSERT_OK(fresh->Reserve(40));
    WriteRows(*fresh, 0, 40, 11);
    ASSERT_NO_FATAL_FAILURE(ExpectSameRows(*a, *fresh, 0, 40));  // a is intact
    std::vector<float> row(16);
    b->ReadV(1, 2, 25, row.data());
    const std::vector<float> written = RowFor(16, 1, 2, 25, 100);
    float amax = 0;
    for (float x : written) amax = std::max(amax, std::fabs(x));
    for (int i = 0; i < 16; ++i) EXPECT_NEAR(row[i], written[i], amax / 100) << KvTypeName(type);
    // a's own rollback into its published block copies too, and leaves the table's copy.
    a->Truncate(20);
    ASSERT_OK(a->Reserve(21));
    WriteRows(*a, 20, 21, 99);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> c, MakePaged(*pool, 64));
    ASSERT_EQ(c->AdoptCachedPrefix(prompt), 32);
    ASSERT_NO_FATAL_FAILURE(ExpectSameRows(*fresh, *c, 0, 32));
  }
}

// Blocks published then released stay adoptable (cached) until fresh allocations need them;
// a bounded pool first maps what is left of its budget, then recycles them.
TEST(KvCacheTest, ReleasedPublishedBlocksAreAdoptedUntilAFreshAllocationRecyclesThem) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvBlockPool> pool, MakePool(8, KvType::kF16, 4));
  const std::vector<int32_t> prompt = Prompt(33);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> a, MakePaged(*pool, 64));
  ASSERT_OK(a->Reserve(33));
  WriteRows(*a, 0, 33, 4);
  a->PublishFullBlocks(prompt);
  a->Release();
  EXPECT_EQ(pool->stats().cached, 2);
  EXPECT_EQ(pool->stats().used, 0);

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> b, MakePaged(*pool, 64));
  EXPECT_EQ(b->AdoptCachedPrefix(prompt), 32);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> expected, MakePaged(*pool, 64));
  ASSERT_OK(expected->Reserve(32));  // the two never-used blocks
  WriteRows(*expected, 0, 32, 4);
  ASSERT_NO_FATAL_FAILURE(ExpectSameRows(*expected, *b, 0, 32));
  b->Release();
  expected->Release();
  EXPECT_EQ(pool->stats().cached, 2);

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> c, MakePaged(*pool, 64));
  ASSERT_OK(c->Reserve(32));  // the free blocks: the cached ones survive
  {  // a cache that adopts the prefix and is gone at once, as a temporary was
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> d, MakePaged(*pool, 64));
    EXPECT_EQ(d->AdoptCachedPrefix(prompt), 32);
  }
  ASSERT_OK(c->Reserve(48));  // a fresh block: the least recently released cached one goes
  EXPECT_EQ(pool->stats().cached, 1);
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> e, MakePaged(*pool, 64));
    EXPECT_EQ(e->AdoptCachedPrefix(prompt), 0);
  }
  EXPECT_EQ(pool->stats().allocated_bytes, 4 * pool->block_bytes());
}

// BlockHashAt is the chain hash a publish stores, from the cache's own hashes or the tokens.
TEST(KvCacheTest, BlockHashAtChainsLikePublishedBlocks) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvBlockPool> pool, MakePool(8, KvType::kF16, 0));
  const std::vector<int32_t> prompt = Prompt(50);
  const absl::Span<const int32_t> t(prompt);
  const uint64_t h0 = KvBlockHash(0, t.subspan(0, 16));
  const uint64_t h1 = KvBlockHash(h0, t.subspan(16, 16));
  const uint64_t h2 = KvBlockHash(h1, t.subspan(32, 16));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> a, MakePaged(*pool, 64));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> b, MakePaged(*pool, 64));
  EXPECT_EQ(b->BlockHashAt(prompt, 0), h0);
  EXPECT_EQ(b->BlockHashAt(prompt, 32), h2);
  EXPECT_EQ(b->BlockHashAt(prompt, 40), 0u);  // not a block start
  EXPECT_EQ(b->BlockHashAt(prompt, 48), 0u);  // not full
  ASSERT_OK(a->Reserve(33));
  WriteRows(*a, 0, 33, 4);
  a->PublishFullBlocks(prompt);
  EXPECT_EQ(a->BlockHashAt(prompt, 32), h2);
  EXPECT_EQ(b->AdoptCachedPrefix(prompt), 32);
  EXPECT_EQ(b->BlockHashAt(prompt, 16), h1);
  EXPECT_EQ(b->BlockHashAt(prompt, 32), h2);
}

}  // namespace
}  // namespace tandem
