#include "core/decoder/decoder.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/kernels/activations.h"
#include "core/kernels/gelu_softcap.h"
#include "core/kernels/matmul.h"
#include "core/kernels/rms_norm.h"

namespace tandem {

static_assert(Decoder::kMaxChunk <= KvCache::kMaxPassRows, "a Create'd cache's ring holds a pass");

Decoder::Decoder(const Model& model, ThreadPool& pool)
    : model_(model),
      config_(model.config()),
      pool_(pool),
      rope_(config_.rope_dim, config_.rope_base, config_.rope_scale, config_.context_length,
            model.rope_factors()) {
  if (config_.rope_base_swa > 0 && config_.sliding_window > 0) {
    rope_swa_.emplace(config_.rope_dim, config_.rope_base_swa, 1.0f, config_.context_length);
  }
}

absl::StatusOr<std::unique_ptr<KvCache>> Decoder::NewCache(int64_t context_size,
                                                           KvType type) const {
  if (context_size < 0) {
    return absl::InvalidArgumentError(absl::StrCat("context size ", context_size));
  }
  return KvCache::Create(CacheShape(context_size == 0 ? config_.context_length : context_size),
                         type);
}

KvCacheShape Decoder::CacheShape(int64_t context_size) const {
  return {config_.n_layers, config_.n_kv_heads,     config_.head_dim,
          context_size,     config_.sliding_window, config_.sliding_pattern};
}

void Decoder::EnsureCapacity(int64_t n, int64_t logit_rows, int64_t context) {
  if (n > capacity_) {
    capacity_ = n;
    x_.resize(n * config_.dim);
    xn_.resize(n * config_.dim);
    q_.resize(n * config_.q_dim());
    k_.resize(n * config_.kv_dim());
    v_.resize(n * config_.kv_dim());
    attn_.resize(n * config_.q_dim());
    gate_.resize(n * config_.ffn_dim);
    up_.resize(n * config_.ffn_dim);
    proj_.resize(n * config_.dim);
    segments_.reserve(n);
    tokens_.reserve(n);
    row_segment_.resize(n);
    logit_rows_.reserve(n);
  }
  const size_t logits_size = logit_rows * config_.vocab_size;
  if (logits_.size() < logits_size) logits_.resize(logits_size);
  scores_stride_ = std::max(scores_stride_, context);
  const size_t scores = static_cast<size_t>(pool_.num_threads()) *
                        (config_.n_heads / config_.n_kv_heads) * scores_stride_;
  if (attention_scores_.size() < scores) attention_scores_.resize(scores);
}

absl::Status Decoder::CheckSegment(const ForwardSegment& segment) const {
  if (segment.cache == nullptr) return absl::InvalidArgumentError("forward pass: no cache");
  const int64_t n = static_cast<int64_t>(segment.tokens.size());
  if (n == 0) return absl::InvalidArgumentError("forward pass: no tokens to run");
  const KvCache& cache = *segment.cache;
  if (segment.start < 0 || segment.start > cache.length()) {
    return absl::InvalidArgumentError(absl::StrCat("forward pass: start position ", segment.start,
                                                   " is past the ", cache.length(),
                                                   " cached tokens"));
  }
  if (segment.start > 0 && segment.start < cache.resume_floor()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "forward pass: start position ", segment.start, " is before ", cache.resume_floor(),
        ", the oldest the cache's sliding-window layers can go on from; run from position 0"));
  }
  const int64_t context = std::min(cache.shape().context_size, rope_.max_positions());
  if (segment.start + n > context) {
    return absl::OutOfRangeError(absl::StrCat("forward pass: positions up to ", segment.start + n,
                                              " exceed the context of ", context));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (segment.tokens[i] < 0 || segment.tokens[i] >= config_.vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrCat("forward pass: token id ", segment.tokens[i], " at index ", i,
                       " is outside the vocabulary of ", config_.vocab_size));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::Span<const float>> Decoder::Forward(KvCache& cache,
                                                         absl::Span<const int32_t> tokens,
                                                         int64_t start, LogitsMode mode) {
  ForwardSegment whole{&cache, tokens, start, mode};
  RETURN_IF_ERROR(CheckSegment(whole));
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t logit_rows = mode == LogitsMode::kAll ? n : mode == LogitsMode::kLast ? 1 : 0;
  EnsureCapacity(std::min(n, kMaxChunk), logit_rows, cache.shape().context_size);
  for (int64_t done = 0; done < n; done += kMaxChunk) {
    const int64_t chunk = std::min(kMaxChunk, n - done);
    const bool last = done + chunk == n;
    segments_.assign(1, {&cache, 0, chunk, start + done,
                         mode == LogitsMode::kLast && !last ? LogitsMode::kNone : mode,
                         nullptr});
    tokens_.assign(tokens.begin() + done, tokens.begin() + done + chunk);
    rows_ = chunk;
    cache.Truncate(start + done);
    RETURN_IF_ERROR(cache.Reserve(start + done + chunk));
    RunBatch(logits_.data() + (mode == LogitsMode::kAll ? done : 0) * config_.vocab_size);
  }
  return absl::MakeConstSpan(logits_.data(), logit_rows * config_.vocab_size);
}

absl::StatusOr<absl::Span<const float>> Decoder::ForwardBatch(
    absl::Span<const ForwardSegment> segments) {
  if (segments.empty()) return absl::InvalidArgumentError("forward batch: no segments");
  int64_t rows = 0, logit_rows = 0, context = 0;
  for (size_t s = 0; s < segments.size(); ++s) {
    if (segments[s].cache == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("forward batch: segment ", s, " has no cache"));
    }
    RETURN_IF_ERROR(CheckSegment(segments[s]));
    for (size_t t = 0; t < s; ++t) {
      if (segments[t].cache == segments[s].cache) {
        return absl::InvalidArgumentError(
            absl::StrCat("forward batch: segments ", t, " and ", s, " share one cache"));
      }
    }
    const int64_t n = static_cast<int64_t>(segments[s].tokens.size());
    rows += n;
    logit_rows += segments[s].logits == LogitsMode::kAll    ? n
                  : segments[s].logits == LogitsMode::kLast ? 1
                                                            : 0;
    context = std::max(context, segments[s].cache->shape().context_size);
  }
  if (rows > kMaxChunk) {
    return absl::InvalidArgumentError(
        absl::StrCat("forward batch: ", rows, " rows exceed the pass limit of ", kMaxChunk));
  }
  EnsureCapacity(rows, logit_rows, context);
  segments_.clear();
  tokens_.clear();
  for (const ForwardSegment& segment : segments) {
    const int64_t n = static_cast<int64_t>(segment.tokens.size());
    segments_.push_back(
        {segment.cache, static_cast<int64_t>(tokens_.size()), n, segment.start, segment.logits,
         segment.hidden});
    tokens_.insert(tokens_.end(), segment.tokens.begin(), segment.tokens.end());
  }
  rows_ = rows;
  for (const SegmentRows& segment : segments_) {
    segment.cache->Truncate(segment.start);
    RETURN_IF_ERROR(segment.cache->Reserve(segment.start + segment.n));
  }
  RunBatch(logits_.data());
  return absl::MakeConstSpan(logits_.data(), logit_rows * config_.vocab_size);
}

void Decoder::RunBatch(float* logits) {
  const int64_t dim = config_.dim;
  logit_rows_.clear();
  for (size_t s = 0; s < segments_.size(); ++s) {
    const SegmentRows& segment = segments_[s];
    for (int64_t i = 0; i < segment.n; ++i) row_segment_[segment.first + i] = s;
    if (segment.logits == LogitsMode::kAll) {
      for (int64_t i = 0; i < segment.n; ++i) logit_rows_.push_back(segment.first + i);
    } else if (segment.logits == LogitsMode::kLast) {
      logit_rows_.push_back(segment.first + segment.n - 1);
    }
  }
  RunLayers();
  for (const SegmentRows& segment : segments_) {
    segment.cache->SetLength(segment.start + segment.n);
  }
  WriteHidden();
  if (logit_rows_.empty()) return;
  // Final norm and output projection for the rows whose logits are wanted, gathered in
  // order: xn[r] = norm(x[logit_rows[r]]).
  for (size_t r = 0; r < logit_rows_.size(); ++r) {
    RmsNorm(x_.data() + logit_rows_[r] * dim, model_.output_norm(), 1, dim, config_.rms_eps,
            xn_.data() + r * dim);
  }
  MatMul(model_.output(), xn_.data(), static_cast<int64_t>(logit_rows_.size()), logits, pool_,
         &matmul_scratch_);
  if (config_.final_softcap > 0) {
    Softcap(logits, static_cast<int64_t>(logit_rows_.size()) * config_.vocab_size,
            config_.final_softcap);
  }
}

void Decoder::WriteHidden() {
  const int64_t dim = config_.dim;
  for (const SegmentRows& segment : segments_) {
    if (segment.hidden == nullptr) continue;
    // Row by row, as the logits' norm below: the same bits whatever the batch.
    for (int64_t i = 0; i < segment.n; ++i) {
      RmsNorm(x_.data() + (segment.first + i) * dim, model_.output_norm(), 1, dim,
              config_.rms_eps, segment.hidden + i * dim);
    }
  }
}

void Decoder::RunLayers() {
  const ModelConfig& c = config_;
  const int64_t dim = c.dim;
  const int64_t n = rows_;
  // x[n, dim] = embedding rows of the tokens (gemma: × sqrt(dim), in float as llama.cpp).
  const WeightMatrix& embedding = model_.token_embedding();
  const float embed_scale = std::sqrt(static_cast<float>(dim));
  for (int64_t i = 0; i < n; ++i) {
    float* x = x_.data() + i * dim;
    const absl::Status ok = DequantizeRow(
        embedding.type,
        absl::MakeConstSpan(embedding.data + tokens_[i] * embedding.row_bytes, embedding.row_bytes),
        absl::MakeSpan(x, dim));
    (void)ok;  // the loader checked the type and row size
    if (c.gemma) {
      for (int64_t j = 0; j < dim; ++j) x[j] *= embed_scale;
    }
  }
  // Each block ends with its residual add and the next block's norm in one row-wise loop (one
  // hand-over of the pool, not two); the first layer's norm runs here.
  NormRows(c.n_layers > 0 ? model_.layer(0).attn_norm : nullptr);
  for (int64_t layer = 0; layer < c.n_layers; ++layer) {
    AttentionBlock(layer);
    FeedForwardBlock(layer);
  }
}

void Decoder::NormRows(const float* norm) {
  if (norm == nullptr) return;
  const int64_t dim = config_.dim;
  ForRows([&](int64_t begin, int64_t end) {
    RmsNorm(x_.data() + begin * dim, norm, end - begin, dim, config_.rms_eps,
            xn_.data() + begin * dim);
  });
}

void Decoder::AttentionBlock(int64_t layer) {
  const ModelConfig& c = config_;
  const LayerWeights& w = model_.layer(layer);
  const int64_t n = rows_;
  const RopeTable& rope = c.IsSlidingLayer(layer) && rope_swa_ ? *rope_swa_ : rope_;
  // x += [post_norm](Wo · attention(rope(Wq·xn), rope(Wk·xn), Wv·xn)), xn = norm(x) of this
  // layer (RunLayers or the previous block wrote it).
  // q[n, q_dim], k[n, kv_dim], v[n, kv_dim]
  const MatMulOutput qkv[] = {{&w.wq, q_.data()}, {&w.wk, k_.data()}, {&w.wv, v_.data()}};
  MatMulShared(qkv, xn_.data(), n, pool_, &matmul_scratch_);
  // q, k, v made ready, into the caches, and attending (decoder_attention.cc).
  Attention(layer, rope);
  MatMul(w.wo, attn_.data(), n, proj_.data(), pool_, &matmul_scratch_);  // [n, dim]
  ForRows([&](int64_t begin, int64_t end) {
    AddResidual(c.gemma ? w.post_attn_norm : nullptr, w.ffn_norm, begin, end);
  });
}

void Decoder::AddResidual(const float* post_norm, const float* next_norm, int64_t begin,
                          int64_t end) {
  const int64_t dim = config_.dim;
  float* proj = proj_.data() + begin * dim;
  if (post_norm != nullptr) RmsNorm(proj, post_norm, end - begin, dim, config_.rms_eps, proj);
  float* x = x_.data() + begin * dim;
  AddInPlace(x, proj, (end - begin) * dim);
  if (next_norm != nullptr) {
    RmsNorm(x, next_norm, end - begin, dim, config_.rms_eps, xn_.data() + begin * dim);
  }
}

void Decoder::FeedForwardBlock(int64_t layer) {
  const ModelConfig& c = config_;
  const LayerWeights& w = model_.layer(layer);
  const int64_t n = rows_;
  // x += [post_norm](W_down · (act(W_gate·xn) ⊙ (W_up·xn))), act = silu or gelu_tanh (gemma),
  // xn = ffn_norm(x) (the attention block wrote it).
  // gate[n, ffn_dim], up[n, ffn_dim]
  const MatMulOutput gate_up[] = {{&w.w_gate, gate_.data()}, {&w.w_up, up_.data()}};
  MatMulShared(gate_up, xn_.data(), n, pool_, &matmul_scratch_);
  ForRows(
      [&](int64_t begin, int64_t end) {
        float* gate = gate_.data() + begin * c.ffn_dim;
        const float* up = up_.data() + begin * c.ffn_dim;
        if (c.gemma) {
          GeluTanhGlu(gate, up, (end - begin) * c.ffn_dim);
        } else {
          SwiGlu(gate, up, (end - begin) * c.ffn_dim);
        }
      },
      c.ffn_dim);
  MatMul(w.w_down, gate_.data(), n, proj_.data(), pool_, &matmul_scratch_);  // [n, dim]
  // The next layer's attention norm with the add (none after the last layer).
  const float* next_norm = layer + 1 < c.n_layers ? model_.layer(layer + 1).attn_norm : nullptr;
  ForRows([&](int64_t begin, int64_t end) {
    AddResidual(c.gemma ? w.post_ffn_norm : nullptr, next_norm, begin, end);
  });
}

void Decoder::ForRows(absl::FunctionRef<void(int64_t, int64_t)> fn) { ForRows(fn, config_.dim); }

void Decoder::ForRows(absl::FunctionRef<void(int64_t, int64_t)> fn, int64_t row_elements) {
  // Below this many elements of the residual stream (decode, short verifies; a small
  // model's whole verify) waking the other threads costs more than the row-wise work: on the
  // SmolLM2-360M shape (dim 960) at 16 rows it is ~14 % of a step on one thread, while a
  // 5-row verify ran ~2 % faster with its six row-wise loops a layer on this thread, and on
  // stories260K (dim 64) a 5-row verify split across threads cost 2.8 steps. The gated
  // activation counts its ffn_dim-wide rows: a 5-row 360M verify splits it (~1 µs a layer
  // less), while keeping rope and the cache writes on one thread (split, the rows' writes into
  // one transposed key block bounce its lines between the cores: +40 % for that step).
  constexpr int64_t kMinParallelElements = 8192;
  if (rows_ * row_elements >= kMinParallelElements && pool_.num_threads() > 1) {
    pool_.ParallelFor(rows_, fn);
  } else {
    fn(0, rows_);
  }
}

}  // namespace tandem
