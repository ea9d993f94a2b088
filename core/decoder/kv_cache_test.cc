#include "core/decoder/kv_cache.h"

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "core/base/status_matchers.h"
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
      f.cache->KeyScores(1, 2, q.data(), head_dim, 1, positions, 0.5f, scores.data(), 37);
      f.cache->ValueSum(1, 2, weights.data(), 37, 1, positions, out.data(), head_dim);
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

}  // namespace
}  // namespace tandem
