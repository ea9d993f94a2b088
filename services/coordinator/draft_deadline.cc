#include "services/coordinator/draft_deadline.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace tandem {

absl::Status ValidateDraftDeadlineOptions(const DraftDeadlineOptions& o) {
  if (o.floor <= absl::ZeroDuration() || o.ceiling < o.floor) {
    return absl::InvalidArgumentError(
        absl::StrCat("draft deadline floor ", absl::FormatDuration(o.floor),
                     " must be > 0 and <= the ceiling ", absl::FormatDuration(o.ceiling)));
  }
  if (!(o.multiple >= 1) || !std::isfinite(o.multiple)) {
    return absl::InvalidArgumentError(
        absl::StrCat("draft deadline multiple ", o.multiple, " must be a finite number >= 1"));
  }
  if (!(o.percentile > 0 && o.percentile <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("draft deadline percentile ", o.percentile, " is outside (0, 1]"));
  }
  if (o.window < 1 || o.min_samples < 1 || o.min_samples > o.window) {
    return absl::InvalidArgumentError(absl::StrCat("draft latency window ", o.window,
                                                   " and min_samples ", o.min_samples,
                                                   " need 1 <= min_samples <= window"));
  }
  if (!(o.liveness_multiple >= o.multiple) || !std::isfinite(o.liveness_multiple)) {
    return absl::InvalidArgumentError(absl::StrCat("draft liveness multiple ", o.liveness_multiple,
                                                   " must be finite and >= the multiple ",
                                                   o.multiple));
  }
  if (o.liveness_floor <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("draft liveness floor must be > 0");
  }
  if (o.cold_deadline < o.floor) {
    return absl::InvalidArgumentError("draft cold deadline must be >= the floor");
  }
  return absl::OkStatus();
}

void DraftLatency::Observe(absl::Duration seconds, int64_t tokens) {
  const absl::Duration per_token = seconds / std::max<int64_t>(1, tokens);
  absl::MutexLock lock(&mutex_);
  if (static_cast<int>(samples_.size()) < options_.window) {
    samples_.push_back(per_token);
  } else {
    samples_[next_] = per_token;
  }
  next_ = (next_ + 1) % static_cast<size_t>(options_.window);
}

absl::Duration DraftLatency::PercentileLocked() const {
  if (samples_.empty()) return absl::ZeroDuration();
  std::vector<absl::Duration> sorted = samples_;
  // Nearest rank: the smallest sample with at least `percentile` of the samples at or below.
  const size_t rank =
      static_cast<size_t>(std::ceil(options_.percentile * static_cast<double>(sorted.size())));
  const size_t index = std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1);
  std::nth_element(sorted.begin(), sorted.begin() + index, sorted.end());
  return sorted[index];
}

absl::Duration DraftLatency::PerTokenPercentile() const {
  absl::MutexLock lock(&mutex_);
  return PercentileLocked();
}

std::optional<absl::Duration> DraftLatency::ScaledLocked(double multiple, int64_t tokens) const {
  if (static_cast<int>(samples_.size()) < options_.min_samples) return std::nullopt;
  return PercentileLocked() * (multiple * static_cast<double>(std::max<int64_t>(1, tokens)));
}

absl::Duration DraftLatency::SlowAfter(int64_t tokens) const {
  absl::MutexLock lock(&mutex_);
  const std::optional<absl::Duration> d = ScaledLocked(options_.multiple, tokens);
  if (!d.has_value()) return options_.cold_deadline;
  return std::clamp(*d, options_.floor, options_.ceiling);
}

absl::Duration DraftLatency::Deadline(int64_t tokens) const {
  absl::MutexLock lock(&mutex_);
  const std::optional<absl::Duration> d = ScaledLocked(options_.liveness_multiple, tokens);
  if (!d.has_value()) return options_.cold_deadline;
  return std::min(std::max({*d, options_.liveness_floor, options_.floor}), options_.ceiling);
}

absl::Time Backoff::Fail(absl::Time now) {
  absl::MutexLock lock(&mutex_);
  // Calls that were in flight when the draft failed fail too: they are that failure, not more.
  if (now < retry_at_) return retry_at_;
  ++failures_;
  const double scale = std::pow(options_.factor, std::min(failures_ - 1, 60));
  const absl::Duration wait = std::min(options_.initial * scale, options_.max);
  retry_at_ = now + wait;
  return retry_at_;
}

void Backoff::Succeed() {
  absl::MutexLock lock(&mutex_);
  failures_ = 0;
  retry_at_ = absl::InfinitePast();
}

void Backoff::Reprobed() {
  absl::MutexLock lock(&mutex_);
  retry_at_ = absl::InfinitePast();
}

bool Backoff::Allowed(absl::Time now) const {
  absl::MutexLock lock(&mutex_);
  return now >= retry_at_;
}

int Backoff::failures() const {
  absl::MutexLock lock(&mutex_);
  return failures_;
}

}  // namespace tandem
