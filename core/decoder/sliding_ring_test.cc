// Sliding-window layers keep only a ring of KV blocks (KvCache): far past the window their
// logits are bit-identical to a cache that keeps every position, their memory stays bounded by
// the window, going back into what the ring dropped restarts from position 0 exactly, and
// shared-prefix blocks carry their ring blocks along.
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status_matchers.h"
#include "core/base/shared_data_test_util.h"
#include "core/decoder/decoder.h"
#include "core/decoder/kv_memory.h"
#include "core/decoder/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem {
namespace {

using ::tandem::testing::StatusIs;
using ::testing::HasSubstr;

std::unique_ptr<Model> LoadShared(const std::string& relative) {
  absl::StatusOr<std::string> path = testing::SharedFile("models/" + relative);
  EXPECT_TRUE(path.ok()) << path.status();
  if (!path.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<Model>> model = Model::Load(*path);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? std::move(*model) : nullptr;
}

std::vector<int32_t> Tokens(int seed, int64_t n, int64_t vocab) {
  std::vector<int32_t> ids = {1};
  for (int64_t i = 1; i < n; ++i) {
    ids.push_back(static_cast<int32_t>((i * 7919 + 13 + seed * 104729) % (vocab - 3) + 3));
  }
  return ids;
}

// A cache of the model's layers that keeps every position (no layer marked sliding: the
// decoder still masks the window, reading the same positions from a whole table).
std::unique_ptr<KvCache> FullCache(const Model& model, int64_t context, KvType kv) {
  const ModelConfig& c = model.config();
  absl::StatusOr<std::unique_ptr<KvCache>> cache =
      KvCache::Create({c.n_layers, c.n_kv_heads, c.head_dim, context}, kv);
  EXPECT_TRUE(cache.ok()) << cache.status();
  return cache.ok() ? std::move(*cache) : nullptr;
}

std::vector<float> Logits(Decoder& decoder, KvCache& cache, absl::Span<const int32_t> tokens,
                          int64_t start, LogitsMode mode) {
  absl::StatusOr<absl::Span<const float>> logits = decoder.Forward(cache, tokens, start, mode);
  EXPECT_TRUE(logits.ok()) << logits.status();
  return logits.ok() ? std::vector<float>(logits->begin(), logits->end()) : std::vector<float>();
}

// Ring blocks held at rest: positions (length - window - slack, length) rounded out to blocks.
int64_t RingBound(int64_t window) {
  return (window - 1 + KvCache::kRingSlack + kKeyBlock - 1) / kKeyBlock + 1;
}

struct RingCase {
  std::string model;
  KvType kv;
  int threads;
};

class SlidingRingTest : public ::testing::TestWithParam<RingCase> {};

// 480 positions against a window of 16: a prefill, single steps and verify-style batches
// give the same bits from the ring as from a cache keeping everything.
TEST_P(SlidingRingTest, RingLogitsEqualTheFullCacheBitForBitFarPastTheWindow) {
  const RingCase& c = GetParam();
  std::unique_ptr<Model> model = LoadShared(c.model);
  ASSERT_NE(model, nullptr);
  const int64_t vocab = model->config().vocab_size, window = model->config().sliding_window;
  ASSERT_EQ(window, 16);
  ThreadPool pool(c.threads);
  Decoder decoder(*model, pool);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> ring, decoder.NewCache(512, c.kv));
  std::unique_ptr<KvCache> full = FullCache(*model, 512, c.kv);
  ASSERT_NE(full, nullptr);
  const std::vector<int32_t> tokens = Tokens(1, 480, vocab);
  const absl::Span<const int32_t> all(tokens);
  EXPECT_EQ(Logits(decoder, *ring, all.first(200), 0, LogitsMode::kAll),
            Logits(decoder, *full, all.first(200), 0, LogitsMode::kAll));
  int64_t position = 200;
  for (int step = 0; position < 480; ++step) {
    // Single decode steps, then a 5-row verify, then a rollback of 3 and a re-run.
    const int64_t n = step % 3 == 2 ? 5 : 1;
    const LogitsMode mode = n > 1 ? LogitsMode::kAll : LogitsMode::kLast;
    const int64_t start = step % 3 == 0 && position > 203 ? position - 3 : position;
    const absl::Span<const int32_t> rows = all.subspan(start, std::min<int64_t>(n, 480 - start));
    ASSERT_EQ(Logits(decoder, *ring, rows, start, mode), Logits(decoder, *full, rows, start, mode))
        << "position " << start;
    position = start + static_cast<int64_t>(rows.size());
    ASSERT_LE(ring->sliding_blocks_held(), RingBound(window)) << "position " << position;
  }
  EXPECT_GT(ring->resume_floor(), 0);  // the ring did drop blocks
  EXPECT_LT(ring->held_bytes(), full->held_bytes());
}

INSTANTIATE_TEST_SUITE_P(GemmaFixtures, SlidingRingTest,
                         ::testing::Values(RingCase{"fixtures/gemma2-F16.gguf", KvType::kF32, 1},
                                           RingCase{"fixtures/gemma2-F16.gguf", KvType::kI8, 2},
                                           RingCase{"fixtures/gemma3-F16.gguf", KvType::kF16, 2},
                                           RingCase{"fixtures/gemma3-F16.gguf", KvType::kF32, 1}),
                         [](const ::testing::TestParamInfo<RingCase>& info) {
                           std::string name = info.param.model + "_" +
                                              std::string(KvTypeName(info.param.kv)) + "_t" +
                                              std::to_string(info.param.threads);
                           for (char& ch : name) {
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

// A gemma3-style model of 6 layers (4 sliding, window 32) at 4000 positions: the sliding
// layers hold a few blocks, the global layers the whole context; printed for the record.
TEST(SlidingRingTest, SlidingLayersKvMemoryIsBoundedByTheWindowAtALongContext) {
  ASSERT_OK_AND_ASSIGN(std::string vocab,
                       testing::SharedFile("models/stories260K/stories260K.gguf"));
  ASSERT_OK_AND_ASSIGN(std::string dir, testing::MakeFixtureModel(
                                            {"--arch", "gemma3", "--layers", "6", "--dim", "64",
                                             "--ffn", "96", "--context", "4096", "--sliding-window",
                                             "32", "--vocab-from", vocab, "--seed", "3"}));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Model> model, Model::Load(dir + "/model.gguf"));
  ASSERT_EQ(model->config().sliding_window, 32);
  ThreadPool pool(2);
  Decoder decoder(*model, pool);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvMemory> memory,
                       KvMemory::Create(decoder.CacheShape(4096), KvType::kF16, 0));
  ASSERT_NE(memory->sliding(), nullptr);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> ring, KvCache::CreatePaged(*memory, 4096));
  // The same paged, every layer keeping every position.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvBlockPool> all_layers,
                       KvBlockPool::Create({6, 2, 16}, KvType::kF16, 0));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> full, KvCache::CreatePaged(*all_layers, 4096));
  const std::vector<int32_t> tokens = Tokens(2, 4000, model->config().vocab_size);
  EXPECT_EQ(Logits(decoder, *ring, tokens, 0, LogitsMode::kLast),
            Logits(decoder, *full, tokens, 0, LogitsMode::kLast));
  // One layer's block: K and V, 2 KV heads, 16 positions, head_dim 16, f16.
  constexpr int64_t kLayerBlock = 2 * 2 * 16 * 16 * 2;
  const int64_t blocks = 4000 / kKeyBlock;
  EXPECT_EQ(full->held_bytes(), 6 * blocks * kLayerBlock);
  EXPECT_EQ(ring->blocks_held() - ring->sliding_blocks_held(), blocks);  // the 2 global layers
  EXPECT_LE(ring->sliding_blocks_held(), RingBound(32));
  EXPECT_EQ(ring->held_bytes(),
            2 * blocks * kLayerBlock + 4 * ring->sliding_blocks_held() * kLayerBlock);
  EXPECT_EQ(memory->bytes_in_use(), ring->held_bytes());
  std::cout << "KV bytes at 4000 positions, f16, 2 global + 4 sliding layers (window 32): "
            << "every position kept " << full->held_bytes() << ", ring " << ring->held_bytes()
            << " (global " << 2 * blocks * kLayerBlock << ", sliding "
            << 4 * ring->sliding_blocks_held() * kLayerBlock << " = " << ring->sliding_blocks_held()
            << " blocks per layer)\n";
  RecordProperty("full_kv_bytes", std::to_string(full->held_bytes()));
  RecordProperty("ring_kv_bytes", std::to_string(ring->held_bytes()));
}

// Going back within the slack re-runs from there; going back into what the ring dropped is
// refused (the window's positions are gone), and the caller's restart from 0 is exact.
TEST(SlidingRingTest, TruncatingBehindTheRingRestartsFromZeroExactly) {
  std::unique_ptr<Model> model = LoadShared("fixtures/gemma2-F16.gguf");
  ASSERT_NE(model, nullptr);
  const int64_t vocab = model->config().vocab_size;
  ThreadPool pool(2);
  Decoder decoder(*model, pool);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> ring, decoder.NewCache(512, KvType::kF32));
  std::unique_ptr<KvCache> full = FullCache(*model, 512, KvType::kF32);
  const std::vector<int32_t> tokens = Tokens(3, 300, vocab);
  const absl::Span<const int32_t> all(tokens);
  Logits(decoder, *ring, all, 0, LogitsMode::kNone);
  const int64_t floor = ring->resume_floor();
  EXPECT_GT(floor, 100);
  EXPECT_LE(floor, 300 - KvCache::kRingSlack);
  EXPECT_EQ(ring->ResumePoint(300 - KvCache::kRingSlack), 300 - KvCache::kRingSlack);
  EXPECT_EQ(ring->ResumePoint(100), 0);

  // Back by the slack: the same logits as a whole cache.
  const absl::Span<const int32_t> tail = all.subspan(300 - KvCache::kRingSlack);
  Logits(decoder, *full, all, 0, LogitsMode::kNone);
  EXPECT_EQ(Logits(decoder, *ring, tail, 300 - KvCache::kRingSlack, LogitsMode::kAll),
            Logits(decoder, *full, tail, 300 - KvCache::kRingSlack, LogitsMode::kAll));

  // Back to 100: refused before the cache changes.
  std::vector<int32_t> other = tokens;
  for (int64_t i = 100; i < 300; ++i) other[i] = static_cast<int32_t>((other[i] * 31 + 5) % vocab);
  const absl::Span<const int32_t> diverged = absl::MakeConstSpan(other).subspan(100);
  EXPECT_THAT(decoder.Forward(*ring, diverged, 100, LogitsMode::kAll).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("run from position 0")));
  EXPECT_EQ(ring->length(), 300);
  // The restart from 0 (what ResumePoint tells a caller to do) is exact.
  const std::vector<float> restarted = Logits(decoder, *ring, other, 0, LogitsMode::kAll);
  EXPECT_EQ(restarted, Logits(decoder, *full, other, 0, LogitsMode::kAll));
}

// Shared prefixes over ring caches: a second session adopts the global blocks and the ring
// blocks the window at the adopted length needs, and goes on with the same logits; once the
// first session's ring blocks of that region are recycled, adoption stops where the ring
// still covers the window (here: nothing, since ring blocks 0..6 were dropped before they were
// published) and the session computes what it needs.
TEST(SlidingRingTest, SharedPrefixesAdoptTheRingBlocksTheWindowNeeds) {
  std::unique_ptr<Model> model = LoadShared("fixtures/gemma3-F16.gguf");
  ASSERT_NE(model, nullptr);
  ThreadPool pool(2);
  Decoder decoder(*model, pool);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvMemory> memory,
                       KvMemory::Create(decoder.CacheShape(512), KvType::kF16, 0));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> a, KvCache::CreatePaged(*memory, 512));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> b, KvCache::CreatePaged(*memory, 512));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KvCache> c, KvCache::CreatePaged(*memory, 512));
  const std::vector<int32_t> tokens = Tokens(4, 400, model->config().vocab_size);
  const absl::Span<const int32_t> all(tokens);
  const std::vector<float> expected = Logits(decoder, *a, all.first(201), 0, LogitsMode::kLast);
  a->PublishFullBlocks(all.first(201));

  // B: 192 positions adopted (12 blocks; the window at 192 needs ring block 11 only).
  EXPECT_EQ(b->AdoptCachedPrefix(all.first(201)), 192);
  EXPECT_EQ(b->length(), 192);
  EXPECT_EQ(b->sliding_blocks_held(), 1);
  EXPECT_EQ(memory->stats().shared, 12 + 1);
  // A goes back into the shared blocks with other tokens: it writes private copies (of the
  // ring block too), and B still reads what A had published.
  std::vector<int32_t> changed(tokens.begin(), tokens.begin() + 201);
  for (int64_t i = 180; i < 201; ++i) changed[i] = static_cast<int32_t>(changed[i] % 200 + 7);
  Logits(decoder, *a, absl::MakeConstSpan(changed).subspan(180), 180, LogitsMode::kNone);
  EXPECT_EQ(memory->stats().shared, 11);  // global blocks 0..10 only
  EXPECT_EQ(Logits(decoder, *b, all.subspan(192, 9), 192, LogitsMode::kLast), expected);
  Logits(decoder, *a, all.subspan(180, 21), 180, LogitsMode::kNone);  // A back on its tokens

  // A and B go on to 400: their ring blocks around 192 drop out and are recycled.
  Logits(decoder, *a, all.subspan(201, 199), 201, LogitsMode::kNone);
  Logits(decoder, *b, all.subspan(201, 199), 201, LogitsMode::kNone);
  // Fresh allocations recycle every cached ring block (bounded: the pool's blocks).
  KvBlockPool& ring_pool = *memory->sliding();
  std::vector<KvBlockPool::Block> taken;
  for (int i = 0; i < 1000 && ring_pool.stats().cached > 0; ++i) {
    taken.emplace_back();
    ASSERT_OK(ring_pool.Allocate(absl::MakeSpan(&taken.back(), 1)));
  }
  ASSERT_EQ(ring_pool.stats().cached, 0);
  for (const KvBlockPool::Block& block : taken) ring_pool.Unref({&block.id, 1});
  EXPECT_EQ(c->AdoptCachedPrefix(all.first(201)), 0);
  EXPECT_EQ(c->length(), 0);
  // A's and B's global blocks 0..10 only (A's block 11 is its own copy since it went back).
  EXPECT_EQ(memory->global()->stats().shared, 11);
  EXPECT_EQ(Logits(decoder, *c, all.first(201), 0, LogitsMode::kLast), expected);
}

}  // namespace
}  // namespace tandem
