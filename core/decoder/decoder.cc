#include "core/decoder/decoder.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/kernels/activations.h"
#include "core/kernels/matmul.h"
#include "core/kernels/rms_norm.h"

namespace tandem {

Decoder::Decoder(const Model& model, ThreadPool& pool)
    : model_(model),
      config_(model.config()),
      pool_(pool),
      rope_(config_.rope_dim, config_.rope_base, config_.rope_scale, config_.context_length) {}

absl::StatusOr<std::unique_ptr<KvCache>> Decoder::NewCache(int64_t context_size,
                                                           KvType type) const {
  if (context_size < 0) {
    return absl::InvalidArgumentError(absl::StrCat("context size ", context_size));
  }
  return KvCache::Create({config_.n_layers, config_.n_kv_heads, config_.head_dim,
                          context_size == 0 ? config_.context_length : context_size},
                         type);
}

void Decoder::EnsureCapacity(int64_t n, int64_t logit_rows) {
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
  }
  const size_t logits_size = logit_rows * config_.vocab_size;
  if (logits_.size() < logits_size) logits_.resize(logits_size);
}

absl::StatusOr<absl::Span<const float>> Decoder::Forward(KvCache& cache,
                                                         absl::Span<const int32_t> tokens,
                                                         int64_t start, LogitsMode mode) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) return absl::InvalidArgumentError("forward pass: no tokens to run");
  if (start < 0 || start > cache.length()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "forward pass: start position ", start, " is past the ", cache.length(), " cached tokens"));
  }
  const int64_t context = std::min(cache.shape().context_size, rope_.max_positions());
  if (start + n > context) {
    return absl::OutOfRangeError(absl::StrCat("forward pass: positions up to ", start + n,
                                              " exceed the context of ", context));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= config_.vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrCat("forward pass: token id ", tokens[i], " at index ", i,
                       " is outside the vocabulary of ", config_.vocab_size));
    }
  }
  const int64_t logit_rows = mode == LogitsMode::kAll ? n : 1;
  EnsureCapacity(std::min(n, kMaxChunk), logit_rows);
  const size_t scores = static_cast<size_t>(pool_.num_threads()) *
                        (config_.n_heads / config_.n_kv_heads) * cache.shape().context_size;
  if (attention_scores_.size() < scores) attention_scores_.resize(scores);
  cache.Truncate(start);
  for (int64_t done = 0; done < n; done += kMaxChunk) {
    const int64_t chunk = std::min(kMaxChunk, n - done);
    RunChunk(cache, tokens.data() + done, chunk, start + done);
    cache.SetLength(start + done + chunk);
    // Final norm and output projection for the rows whose logits are wanted.
    const int64_t first = mode == LogitsMode::kAll ? 0 : chunk - 1;
    if (mode == LogitsMode::kLast && done + chunk < n) continue;
    const int64_t rows = chunk - first;
    RmsNorm(x_.data() + first * config_.dim, model_.output_norm(), rows, config_.dim,
            config_.rms_eps, xn_.data());
    float* out = logits_.data() + (mode == LogitsMode::kAll ? done : 0) * config_.vocab_size;
    MatMul(model_.output(), xn_.data(), rows, out, pool_, &matmul_scratch_);
  }
  return absl::MakeConstSpan(logits_.data(), logit_rows * config_.vocab_size);
}

void Decoder::RunChunk(KvCache& cache, const int32_t* tokens, int64_t n, int64_t start) {
  const ModelConfig& c = config_;
  const int64_t dim = c.dim;
  // x[n, dim] = embedding rows of the tokens.
  const WeightMatrix& embedding = model_.token_embedding();
  for (int64_t i = 0; i < n; ++i) {
    const absl::Status ok = DequantizeRow(
        embedding.type,
        absl::MakeConstSpan(embedding.data + tokens[i] * embedding.row_bytes, embedding.row_bytes),
        absl::MakeSpan(x_.data() + i * dim, dim));
    (void)ok;  // the loader checked the type and row size
  }
  for (int64_t layer = 0; layer < c.n_layers; ++layer) {
    const LayerWeights& w = model_.layer(layer);
    // Attention block: x += Wo · attention(rope(Wq·xn), rope(Wk·xn), Wv·xn).
    RmsNorm(x_.data(), w.attn_norm, n, dim, c.rms_eps, xn_.data());
    // q[n, q_dim], k[n, kv_dim], v[n, kv_dim]
    const MatMulOutput qkv[] = {{&w.wq, q_.data()}, {&w.wk, k_.data()}, {&w.wv, v_.data()}};
    MatMulShared(qkv, xn_.data(), n, pool_, &matmul_scratch_);
    for (int64_t i = 0; i < n; ++i) {
      float* q = q_.data() + i * c.q_dim();
      float* k = k_.data() + i * c.kv_dim();
      float* v = v_.data() + i * c.kv_dim();
      if (c.qkv_bias) {
        for (int64_t j = 0; j < c.q_dim(); ++j) q[j] += w.bq[j];
        for (int64_t j = 0; j < c.kv_dim(); ++j) k[j] += w.bk[j];
        for (int64_t j = 0; j < c.kv_dim(); ++j) v[j] += w.bv[j];
      }
      ApplyRope(rope_, c.rope_layout, start + i, c.n_heads, c.head_dim, q);
      ApplyRope(rope_, c.rope_layout, start + i, c.n_kv_heads, c.head_dim, k);
      for (int64_t h = 0; h < c.n_kv_heads; ++h) {
        cache.WriteK(layer, h, start + i, k + h * c.head_dim);
        cache.WriteV(layer, h, start + i, v + h * c.head_dim);
      }
    }
    Attention(cache, layer, n, start);
    MatMul(w.wo, attn_.data(), n, proj_.data(), pool_, &matmul_scratch_);  // [n, dim]
    for (int64_t j = 0; j < n * dim; ++j) x_[j] += proj_[j];
    // Feed-forward block: x += W_down · (silu(W_gate·xn) ⊙ (W_up·xn)).
    RmsNorm(x_.data(), w.ffn_norm, n, dim, c.rms_eps, xn_.data());
    // gate[n, ffn_dim], up[n, ffn_dim]
    const MatMulOutput gate_up[] = {{&w.w_gate, gate_.data()}, {&w.w_up, up_.data()}};
    MatMulShared(gate_up, xn_.data(), n, pool_, &matmul_scratch_);
    SwiGlu(gate_.data(), up_.data(), n * c.ffn_dim);
    MatMul(w.w_down, gate_.data(), n, proj_.data(), pool_, &matmul_scratch_);  // [n, dim]
    for (int64_t j = 0; j < n * dim; ++j) x_[j] += proj_[j];
  }
}

void Decoder::Attention(const KvCache& cache, int64_t layer, int64_t n, int64_t start) {
  const ModelConfig& c = config_;
  const int64_t group = c.n_heads / c.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const int64_t context = cache.shape().context_size;
  // One task per (token, head), ordered by KV head, then token, then head: each attends
  // causally to positions [0, start + i]: scores, a softmax, then the weighted sum of
  // values. The heads of a KV group that fall in one thread's range run together, sharing
  // each load of the cached rows, and the tokens of a batch follow each other on the same
  // cached rows while they are in cache; a head's arithmetic is the same either way. Every
  // step runs in position order and depends only on the position's own data, so a token's
  // result is the same alone or in a batch. Short contexts of small models run on this
  // thread: waking another costs more.
  const int64_t tasks = n * c.n_heads;
  const int64_t work = tasks * (start + n) * c.head_dim;
  pool_.ParallelFor(
      tasks,
      [&](int64_t begin, int64_t end) {
        // Each thread has its own score rows.
        float* scores = attention_scores_.data() + ThreadPool::ThreadIndex() * group * context;
        for (int64_t task = begin; task < end;) {
          const int64_t kv_head = task / (n * group), i = task / group % n;
          const int64_t h = kv_head * group + task % group;
          // This head and the following ones of its group, within the range.
          const int heads = static_cast<int>(std::min(end - task, group - task % group));
          const float* q = q_.data() + i * c.q_dim() + h * c.head_dim;
          float* out = attn_.data() + i * c.q_dim() + h * c.head_dim;
          const int64_t positions = start + i + 1;
          cache.KeyScores(layer, kv_head, q, c.head_dim, heads, positions, scale, scores, context);
          for (int j = 0; j < heads; ++j) Softmax(scores + j * context, positions);
          cache.ValueSum(layer, kv_head, scores, context, heads, positions, out, c.head_dim);
          task += heads;
        }
      },
      work < (int64_t{1} << 15) ? tasks : 1);
}

}  // namespace tandem
