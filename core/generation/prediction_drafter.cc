#include "core/generation/prediction_drafter.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

namespace tandem {

PredictionDrafter::PredictionDrafter(std::vector<int32_t> prediction, int64_t output_start,
                                     const PredictionOptions& options)
    : prediction_(std::move(prediction)), output_start_(output_start), options_(options) {}

int64_t PredictionDrafter::NearbyIndex(int32_t token) const {
  const int64_t size = static_cast<int64_t>(prediction_.size());
  for (int64_t d = 1; d <= options_.window; ++d) {
    for (const int64_t at : {next_ + d, next_ - d}) {
      if (at >= 0 && at < size && prediction_[at] == token) return at + 1;
    }
  }
  return -1;
}

int64_t PredictionDrafter::SuffixMatchIndex(absl::Span<const int32_t> output, int64_t end) const {
  const int64_t size = static_cast<int64_t>(prediction_.size());
  const int64_t longest = std::min<int64_t>(options_.max_match, end);
  int64_t best = -1;  // the index after the best match
  int64_t best_length = 0;
  int64_t best_distance = 0;
  for (int64_t e = 0; e < size; ++e) {  // e: where the match ends in the prediction
    int64_t m = 0;
    while (m < longest && m <= e && prediction_[e - m] == output[end - 1 - m]) ++m;
    if (m < options_.min_match || m < best_length) continue;
    // Nearest after the expected index first, then nearest before it.
    const int64_t after = e + 1;
    const int64_t from = next_ >= 0 ? next_ : anchor_;
    const int64_t distance = after >= from ? after - from : size + (from - after);
    if (m > best_length || distance < best_distance) {
      best = after;
      best_length = m;
      best_distance = distance;
    }
  }
  return best;
}

void PredictionDrafter::Step(absl::Span<const int32_t> output, int64_t i) {
  const int32_t token = output[i];
  const int64_t size = static_cast<int64_t>(prediction_.size());
  blind_ = false;
  if (next_ >= 0 && next_ < size && prediction_[next_] == token) {
    ++next_;
    misses_ = 0;
    ++matched_;
    return;
  }
  const int32_t missed_before = misses_;
  matched_ = 0;
  misses_ = missed_before + 1;
  const bool aligned = next_ >= 0 && missed_before < options_.window;
  if (aligned) {
    if (const int64_t nearby = NearbyIndex(token); nearby >= 0) {
      next_ = nearby;
      return;
    }
  }
  // Far jumps only once a nearby explanation failed (in repetitive text the same few tokens
  // recur far away); a suffix of min_match tokens is evidence enough to guess in full again.
  if (!aligned || missed_before > 0) {
    if (const int64_t matched = SuffixMatchIndex(output, i + 1); matched >= 0) {
      next_ = matched;
      misses_ = 0;
      matched_ = options_.min_match;
      return;
    }
  }
  // A substitution while aligned (past the end nothing is expected); more than `window`
  // misses in a row are no edit but another text: the output is lost.
  if (aligned && next_ < size) {
    ++next_;
    blind_ = true;
  } else {
    next_ = -1;
    misses_ = 0;
  }
}

void PredictionDrafter::Guesses(absl::Span<const int32_t> sequence, int32_t k,
                                std::vector<int32_t>* out) {
  out->clear();
  const int64_t start = std::min<int64_t>(output_start_, static_cast<int64_t>(sequence.size()));
  const absl::Span<const int32_t> output = sequence.subspan(start);
  // Keep the alignment of the longest common prefix with the last output, replay the rest.
  size_t common = 0;
  while (common < seen_.size() && common < output.size() && seen_[common] == output[common]) {
    ++common;
  }
  if (common < seen_.size()) {
    seen_.resize(common);
    states_.resize(common);
    next_ = common == 0 ? 0 : states_.back().next;
    anchor_ = common == 0 ? 0 : states_.back().anchor;
    misses_ = common == 0 ? 0 : states_.back().misses;
    matched_ = common == 0 ? kConfirmed : states_.back().matched;
    blind_ = common == 0 ? false : states_.back().blind;
  }
  for (size_t i = common; i < output.size(); ++i) {
    Step(output, static_cast<int64_t>(i));
    if (next_ >= 0) anchor_ = next_;
    seen_.push_back(output[i]);
    states_.push_back({next_, anchor_, misses_, matched_, blind_});
  }
  // Inside a run of edits: after a second miss explained by no evidence, or a third.
  if (next_ < 0 || k <= 0 || misses_ >= 3 || (misses_ == 2 && blind_)) return;
  if (misses_ == 1 || matched_ < kConfirmed) k = std::min(k, options_.after_edit);
  const int64_t end = std::min<int64_t>(next_ + k, static_cast<int64_t>(prediction_.size()));
  out->assign(prediction_.begin() + next_, prediction_.begin() + std::max(next_, end));
}

}  // namespace tandem
