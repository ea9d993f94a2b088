#include "services/coordinator/choices.h"

#include <algorithm>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace tandem {
namespace {

// What the choices of one request share while they run.
class ChoiceState {
 public:
  ChoiceState(int32_t n, const ChoiceWrite& write, const ChoiceCancelled& cancelled)
      : n_(n), write_(write), cancelled_(cancelled) {}

  // Sends choice `index`'s message tagged with it; false once the request is ending.
  bool Write(int32_t index, const v1::GenerateResponse& message) {
    absl::MutexLock lock(&mutex_);
    if (stop_) return false;
    v1::GenerateResponse tagged = message;
    tagged.set_choice_index(index);
    if (index == 0) first_started_ = true;  // its prefill is done: the others may adopt it
    if (tagged.has_final()) Count(index, tagged.mutable_final());
    if (!write_(tagged)) {
      stop_ = true;
      return false;
    }
    return true;
  }
  bool Cancelled() {
    {
      absl::MutexLock lock(&mutex_);
      if (stop_) return true;
    }
    return cancelled_ && cancelled_();
  }
  // Choice `index` ended with `status`: the first failure ends the request.
  void Ended(int32_t index, const absl::Status& status) {
    absl::MutexLock lock(&mutex_);
    if (index == 0) first_started_ = true;
    if (!status.ok() && first_error_.ok()) {
      first_error_ = status;
      stop_ = true;
    }
  }
  // Waits until choice 0 has sent a message or ended; false when the request is ending.
  bool AwaitFirst() {
    absl::MutexLock lock(&mutex_);
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) { return first_started_ || stop_; };
    mutex_.Await(absl::Condition(&ready));
    return !stop_;
  }
  absl::Status status() {
    absl::MutexLock lock(&mutex_);
    return first_error_;
  }

 private:
  // Adds a choice's final to the request's totals; the last one carries them.
  void Count(int32_t index, v1::GenerationResult* result) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    if (index == 0) {
      total_.set_prompt_tokens(result->usage().prompt_tokens());
      total_.set_cached_prompt_tokens(result->usage().cached_prompt_tokens());
    }
    const v1::Usage& u = result->usage();
    total_.set_generated_tokens(total_.generated_tokens() + u.generated_tokens());
    total_.set_accepted_prediction_tokens(total_.accepted_prediction_tokens() +
                                          u.accepted_prediction_tokens());
    total_.set_rejected_prediction_tokens(total_.rejected_prediction_tokens() +
                                          u.rejected_prediction_tokens());
    if (++finished_ == n_) *result->mutable_request_usage() = total_;
  }

  const int32_t n_;
  const ChoiceWrite& write_;
  const ChoiceCancelled& cancelled_;
  absl::Mutex mutex_;
  bool first_started_ ABSL_GUARDED_BY(mutex_) = false;
  bool stop_ ABSL_GUARDED_BY(mutex_) = false;
  absl::Status first_error_ ABSL_GUARDED_BY(mutex_);
  v1::Usage total_ ABSL_GUARDED_BY(mutex_);
  int32_t finished_ ABSL_GUARDED_BY(mutex_) = 0;
};

// Runs choice `index` of `request` through `generate`, reporting to `state`.
void RunChoice(const v1::GenerateRequest& request, uint64_t seed, int32_t index,
               const GenerateOneChoice& generate, ChoiceState& state) {
  v1::GenerateRequest one = request;
  one.clear_n();
  one.mutable_sampling()->set_seed(ChoiceSeed(seed, index));
  const absl::Status status = generate(
      one, [&](const v1::GenerateResponse& m) { return state.Write(index, m); },
      [&] { return state.Cancelled(); });
  state.Ended(index, status);
}

}  // namespace

uint64_t ChoiceSeed(uint64_t seed, int32_t index) {
  if (index == 0) return seed;
  uint64_t z = seed + static_cast<uint64_t>(index) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int32_t ChoiceCount(const v1::GenerateRequest& request) { return std::max(1, request.n()); }

absl::Status CheckChoices(const v1::GenerateRequest& request, const RequestLimits& limits) {
  if (request.n() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("n ", request.n(), " < 0"));
  }
  if (request.n() > limits.max_choices) {
    return absl::InvalidArgumentError(absl::StrCat("n is ", request.n(), " choices; the limit is ",
                                                   limits.max_choices, " (--max-choices)"));
  }
  if (request.n() > 1 && !request.session_id().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "n ", request.n(),
        " with a session_id: a session holds one conversation, and several replies would "
        "fork it (ask for several choices without a session_id)"));
  }
  return absl::OkStatus();
}

absl::Status GenerateChoices(const v1::GenerateRequest& request, uint64_t fresh_seed,
                             const GenerateOneChoice& generate, const ChoiceWrite& write,
                             const ChoiceCancelled& cancelled) {
  const int32_t n = ChoiceCount(request);
  const uint64_t seed = request.sampling().has_seed() ? request.sampling().seed() : fresh_seed;
  ChoiceState state(n, write, cancelled);
  std::vector<std::thread> others;
  others.reserve(n - 1);
  for (int32_t i = 1; i < n; ++i) {
    others.emplace_back([&, i] {
      // After choice 0's prefill, so that the prompt's blocks are there to adopt.
      if (state.AwaitFirst()) RunChoice(request, seed, i, generate, state);
    });
  }
  RunChoice(request, seed, 0, generate, state);
  for (std::thread& t : others) t.join();
  return state.status();
}

}  // namespace tandem
