// The attention half of Decoder's layer: the rows' q, k and v made ready (bias, q/k norms,
// rope, k and v into the caches) and each row's heads attending to its session's cache.
//
// Two ways to run it, with the same arithmetic per head (so the same bits):
//   - any batch: the rows' q/k/v first (Decoder::ForRows), then one parallel loop over
//     (row, head) tasks;
//   - a decode step (every segment one row, as a worker's scheduler runs many streams): one
//     parallel loop over (row, KV head) units, each making its own q heads, k and v ready and
//     then attending with them. A row's k and v are the only new ones its heads read, and no
//     other unit reads them, so the pool's hand-over between the two is not needed (issue 31:
//     one per layer fewer, and the cache lines just written are read back on the same core).
#include <algorithm>
#include <cmath>

#include "core/decoder/decoder.h"
#include "core/kernels/activations.h"
#include "core/kernels/gelu_softcap.h"
#include "core/kernels/rms_norm.h"

namespace tandem {

void Decoder::QkvRows(int64_t layer, const RopeTable& rope, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) PrepareHeads(layer, rope, i, 0, config_.n_kv_heads);
}

void Decoder::PrepareHeads(int64_t layer, const RopeTable& rope, int64_t row, int64_t kv_begin,
                           int64_t kv_end) {
  const ModelConfig& c = config_;
  const LayerWeights& w = model_.layer(layer);
  const int64_t group = c.n_heads / c.n_kv_heads, hd = c.head_dim;
  const SegmentRows& segment = segments_[row_segment_[row]];
  const int64_t position = segment.start + (row - segment.first);
  // The q heads of KV heads [kv_begin, kv_end), and those k and v heads: each element's and
  // each head's arithmetic does not depend on which others are done with it.
  const int64_t q_begin = kv_begin * group * hd, q_count = (kv_end - kv_begin) * group;
  const int64_t kv_offset = kv_begin * hd, kv_count = kv_end - kv_begin;
  float* q = q_.data() + row * c.q_dim() + q_begin;
  float* k = k_.data() + row * c.kv_dim() + kv_offset;
  float* v = v_.data() + row * c.kv_dim() + kv_offset;
  if (c.qkv_bias) {
    for (int64_t j = 0; j < q_count * hd; ++j) q[j] += w.bq[q_begin + j];
    for (int64_t j = 0; j < kv_count * hd; ++j) k[j] += w.bk[kv_offset + j];
    for (int64_t j = 0; j < kv_count * hd; ++j) v[j] += w.bv[kv_offset + j];
  }
  if (c.qk_norm) {  // each head's q and k RMS-normalised on their own
    RmsNorm(q, w.q_norm, q_count, hd, c.rms_eps, q);
    RmsNorm(k, w.k_norm, kv_count, hd, c.rms_eps, k);
  }
  ApplyRope(rope, c.rope_layout, position, q_count, hd, q);
  ApplyRope(rope, c.rope_layout, position, kv_count, hd, k);
  for (int64_t h = 0; h < kv_count; ++h) {
    segment.cache->WriteK(layer, kv_begin + h, position, k + h * hd);
    segment.cache->WriteV(layer, kv_begin + h, position, v + h * hd);
  }
}

void Decoder::AttendHeads(int64_t layer, const SegmentRows& segment, int64_t i, int64_t kv_head,
                          int64_t h, int heads, float* scores) {
  const ModelConfig& c = config_;
  const float scale =
      c.attn_scale > 0 ? c.attn_scale : 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const int64_t stride = scores_stride_;
  const int64_t row = segment.first + i;
  const float* q = q_.data() + row * c.q_dim() + h * c.head_dim;
  float* out = attn_.data() + row * c.q_dim() + h * c.head_dim;
  const int64_t positions = segment.start + i + 1;
  // A sliding layer sees the last `window` positions: the cache is read from the block
  // holding the first of them, and the older ones there get weight 0, which adds nothing to
  // the value sum (the same sum as over every position with zeros).
  const int64_t first =
      c.IsSlidingLayer(layer) ? std::max<int64_t>(0, positions - c.sliding_window) : 0;
  const int64_t from = first / kKeyBlock * kKeyBlock;
  segment.cache->KeyScores(layer, kv_head, q, c.head_dim, heads, from, positions, scale, scores,
                           stride);
  for (int j = 0; j < heads; ++j) {
    float* row_scores = scores + j * stride;
    if (c.attn_softcap > 0) Softcap(row_scores + first, positions - first, c.attn_softcap);
    Softmax(row_scores + first, positions - first);
    std::fill(row_scores + from, row_scores + first, 0.0f);
  }
  segment.cache->ValueSum(layer, kv_head, scores, stride, heads, from, positions, out, c.head_dim);
}

void Decoder::PrefetchUnit(int64_t layer, int64_t unit) const {
  const ModelConfig& c = config_;
  const int64_t row = unit / c.n_kv_heads, kv_head = unit % c.n_kv_heads;
  const SegmentRows& segment = segments_[row_segment_[row]];
  const int64_t positions = segment.start + 1;
  const int64_t first =
      c.IsSlidingLayer(layer) ? std::max<int64_t>(0, positions - c.sliding_window) : 0;
  segment.cache->Prefetch(layer, kv_head, first, positions);
}

void Decoder::Attention(int64_t layer, const RopeTable& rope) {
  const ModelConfig& c = config_;
  const int64_t group = c.n_heads / c.n_kv_heads;
  const int64_t stride = scores_stride_;
  // Short contexts of small models run on this thread: waking another costs more.
  int64_t work = 0;
  for (const SegmentRows& segment : segments_) {
    work += segment.n * c.n_heads * (segment.start + segment.n) * c.head_dim;
  }
  const bool alone = work < (int64_t{1} << 15);
  bool decode = true;
  for (const SegmentRows& segment : segments_) decode = decode && segment.n == 1;
  if (decode) {
    // One unit per (segment, KV head): its heads made ready, then attending together.
    const int64_t units = rows_ * c.n_kv_heads;
    pool_.ParallelFor(
        units,
        [&](int64_t begin, int64_t end) {
          float* scores = attention_scores_.data() + ThreadPool::ThreadIndex() * group * stride;
          for (int64_t unit = begin; unit < end; ++unit) {
            const int64_t row = unit / c.n_kv_heads, kv_head = unit % c.n_kv_heads;
            if (unit + 1 < end) PrefetchUnit(layer, unit + 1);  // its cache lines, cold
            PrepareHeads(layer, rope, row, kv_head, kv_head + 1);
            AttendHeads(layer, segments_[row_segment_[row]], 0, kv_head, kv_head * group,
                        static_cast<int>(group), scores);
          }
        },
        alone ? units : 1);
    return;
  }
  // Rows write distinct positions of their caches (Reserve ran before the pass).
  ForRows([&](int64_t begin, int64_t end) { QkvRows(layer, rope, begin, end); });
  // One task per (row, head), ordered by segment, then KV head, then row, then head: each row
  // attends causally to its own session's positions [0, position]: scores, a softmax, then
  // the weighted sum of values. The heads of a KV group that fall in one thread's range run
  // together, sharing each load of the cached rows, and the rows of a segment follow each
  // other on the same cached rows while they are in cache; a head's arithmetic is the same
  // either way. Every step runs in position order and depends only on the position's own
  // data, so a row's result is the same alone, in a batch or beside other sessions' rows.
  const int64_t tasks = rows_ * c.n_heads;
  pool_.ParallelFor(
      tasks,
      [&](int64_t begin, int64_t end) {
        // Each thread has its own score rows.
        float* scores = attention_scores_.data() + ThreadPool::ThreadIndex() * group * stride;
        size_t s = row_segment_[begin / c.n_heads];
        for (int64_t task = begin; task < end;) {
          while (task >= (segments_[s].first + segments_[s].n) * c.n_heads) ++s;
          const SegmentRows& segment = segments_[s];
          const int64_t local = task - segment.first * c.n_heads;  // task within the segment
          const int64_t kv_head = local / (segment.n * group), i = local / group % segment.n;
          const int64_t h = kv_head * group + local % group;
          // This head and the following ones of its group, within the range.
          const int heads = static_cast<int>(std::min(end - task, group - local % group));
          AttendHeads(layer, segment, i, kv_head, h, heads, scores);
          task += heads;
        }
      },
      alone ? tasks : 1);
}

}  // namespace tandem
