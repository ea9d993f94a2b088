// The forward pass of a Llama-family model over a session's KV cache.
//
//   Decoder decoder(model, pool);
//   ASSIGN_OR_RETURN(auto logits, decoder.Forward(cache, tokens, start, LogitsMode::kAll));
//
// Forward runs `tokens` at positions [start, start + n): it first truncates the cache to
// `start` (sync by position), then runs the tokens in chunks of at most kMaxChunk, writing
// their keys and values, and returns logits for no position, the last or every position.
//
// ForwardBatch runs a ragged batch: rows of several sessions (segments, each with its own
// cache and positions) in one pass, so each weight is read once for all of them; every
// segment gets the logits rows it asks for. A worker's scheduler builds these batches.
//
// Batch invariance: a position's logits are bit-identical whether it runs alone, in a verify
// batch, inside a prefill chunk or beside other sessions' rows, at any thread count. Every
// reduction (matmul rows, norms, attention) runs per token in an order that depends on neither n
// nor the thread split, and each token attends to keys read back from the cache in its stored type.
//
// Scratch buffers grow to the largest batch seen and are then reused: once a batch size has
// run, later passes of that size or smaller allocate nothing (decode steps included).
//
// Thread-safety: one Decoder per inference thread; Forward is not re-entrant. The Model is
// shared; each session has its own KvCache.
#ifndef TANDEM_CORE_DECODER_DECODER_H_
#define TANDEM_CORE_DECODER_DECODER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/decoder/forward_runner.h"
#include "core/decoder/kv_cache.h"
#include "core/decoder/model.h"
#include "core/kernels/matmul.h"
#include "core/kernels/rope.h"
#include "core/kernels/thread_pool.h"

namespace tandem {

// One session's rows in a ragged batch.
struct ForwardSegment {
  KvCache* cache = nullptr;
  absl::Span<const int32_t> tokens;  // at positions [start, start + n)
  int64_t start = 0;
  LogitsMode logits = LogitsMode::kLast;
  // When set, receives the rows' hidden states after the final RMSNorm (what the output
  // projection reads; llama.cpp's embedding tensor), [n, dim] (embedding.h).
  float* hidden = nullptr;
};

class Decoder : public ForwardRunner {
 public:
  // Rows of one pass: a prefill chunk, or a whole ragged batch.
  static constexpr int64_t kMaxChunk = 512;

  Decoder(const Model& model, ThreadPool& pool);

  const Model& model() const { return model_; }
  ThreadPool& pool() const { return pool_; }

  // A cache shaped for this model with `context_size` positions (0: the model's context).
  // Its sliding-window layers keep a ring (KvCache).
  absl::StatusOr<std::unique_ptr<KvCache>> NewCache(int64_t context_size, KvType type) const;
  // The cache shape of this model for `context_size` positions (for KvMemory and NewCache).
  KvCacheShape CacheShape(int64_t context_size) const;

  // Logits [rows, vocab] (rows = 0 for kNone, 1 for kLast, n for kAll), valid until the next
  // call. kInvalidArgument: empty `tokens`, start > cache length, an id outside the
  // vocabulary; kOutOfRange: start + n beyond the cache's context; kFailedPrecondition: a
  // start the cache cannot go on from (KvCache::resume_floor); the cache's own error
  // (kResourceExhausted) when it cannot get memory for the new positions.
  absl::StatusOr<absl::Span<const float>> Forward(KvCache& cache, absl::Span<const int32_t> tokens,
                                                  int64_t start, LogitsMode mode) override;

  // Runs all segments as one pass: the logits rows they ask for, concatenated in segment
  // order, valid until the next call. Each segment is checked as in Forward before any
  // cache changes; also kInvalidArgument for no segments, more than kMaxChunk rows in all,
  // or two segments on one cache.
  absl::StatusOr<absl::Span<const float>> ForwardBatch(absl::Span<const ForwardSegment> segments);

  // The checks Forward makes of one segment, without running it (any row count).
  absl::Status CheckSegment(const ForwardSegment& segment) const;

 private:
  // A segment's rows in the scratch: rows [first, first + n) at positions [start, start + n).
  struct SegmentRows {
    KvCache* cache;
    int64_t first, n, start;
    LogitsMode logits;
    float* hidden;  // ForwardSegment::hidden
  };

  void EnsureCapacity(int64_t n, int64_t logit_rows, int64_t context);
  // Runs segments_ (rows_ rows in all, tokens in tokens_) and writes the wanted logits rows
  // from `logits` on.
  void RunBatch(float* logits);
  void RunLayers();
  // The final norm of every row of the segments that ask for their hidden states.
  void WriteHidden();
  // fn(begin, end) over the batch's rows [0, rows_): row-wise work (norms, rope, residual
  // adds) split across the pool's threads for batches big enough to pay for it; each row's
  // arithmetic is the same either way. `row_elements`: the width of the rows fn works on
  // (dim by default; ffn_dim for the gated activation), which sets "big enough".
  void ForRows(absl::FunctionRef<void(int64_t, int64_t)> fn);
  void ForRows(absl::FunctionRef<void(int64_t, int64_t)> fn, int64_t row_elements);
  void AttentionBlock(int64_t layer);
  // decoder_attention.cc:
  // Bias, q/k norms and rope of rows [begin, end), and their k and v into the caches.
  void QkvRows(int64_t layer, const RopeTable& rope, int64_t begin, int64_t end);
  // The same for one row's KV heads [kv_begin, kv_end) and the q heads of their groups.
  void PrepareHeads(int64_t layer, const RopeTable& rope, int64_t row, int64_t kv_begin,
                    int64_t kv_end);
  // Row i of `segment` attends with its q heads [h, h + heads) of `kv_head`'s group, into
  // attn_; `scores`: the calling thread's score rows.
  void AttendHeads(int64_t layer, const SegmentRows& segment, int64_t i, int64_t kv_head, int64_t h,
                   int heads, float* scores);
  // x += [RmsNorm with post_norm](proj) for rows [begin, end); no norm when null. Then, when
  // next_norm is set, xn = RmsNorm(x) with it for those rows (the next block's input norm,
  // fused into this loop: one hand-over of the pool fewer).
  void AddResidual(const float* post_norm, const float* next_norm, int64_t begin, int64_t end);
  // xn = RmsNorm(x) with `norm` for every row (nothing when null).
  void NormRows(const float* norm);
  void FeedForwardBlock(int64_t layer);
  // Prefetches the cached keys and values a decode step's (row, KV head) unit will read.
  void PrefetchUnit(int64_t layer, int64_t unit) const;
  // The rows' q, k, v made ready and attending (decoder_attention.cc).
  void Attention(int64_t layer, const RopeTable& rope);

  const Model& model_;
  const ModelConfig& config_;
  ThreadPool& pool_;
  RopeTable rope_;
  std::optional<RopeTable> rope_swa_;  // the sliding layers' own base (gemma3), if any
  int64_t capacity_ = 0;               // rows the scratch holds
  int64_t rows_ = 0;                   // rows of the batch being run
  std::vector<SegmentRows> segments_;  // of the batch being run
  std::vector<int32_t> tokens_;        // [n] the batch's tokens
  std::vector<int64_t> row_segment_;   // [n] each row's index in segments_
  std::vector<int64_t> logit_rows_;    // rows whose logits are wanted, in order
  // Scratch, [capacity_, …] each.
  std::vector<float> x_;                 // [n, dim] residual stream
  std::vector<float> xn_;                // [n, dim] normalised
  std::vector<float> q_;                 // [n, q_dim]
  std::vector<float> k_;                 // [n, kv_dim]
  std::vector<float> v_;                 // [n, kv_dim]
  std::vector<float> attn_;              // [n, q_dim]
  std::vector<float> gate_;              // [n, ffn_dim]
  std::vector<float> up_;                // [n, ffn_dim]
  std::vector<float> proj_;              // [n, dim]
  MatMulScratch matmul_scratch_;         // the matmuls' quantized activations
  std::vector<float> logits_;            // [logit rows, vocab]
  std::vector<float> attention_scores_;  // [threads, group, context]: score rows per thread
  int64_t scores_stride_ = 0;            // context of the score rows
};

}  // namespace tandem

#endif  // TANDEM_CORE_DECODER_DECODER_H_
