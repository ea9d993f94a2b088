// A TokenConstraint that reports how long each FillMask took (for the workers' mask-time
// metric), passing everything else to the constraint it wraps.
//
// Thread-safety: as the wrapped constraint's; `observe` is called on the caller's thread.
#ifndef TANDEM_CORE_GRAMMAR_OBSERVED_CONSTRAINT_H_
#define TANDEM_CORE_GRAMMAR_OBSERVED_CONSTRAINT_H_

#include <chrono>
#include <functional>
#include <memory>
#include <utility>

#include "core/grammar/token_constraint.h"

namespace tandem {

class ObservedConstraint : public TokenConstraint {
 public:
  ObservedConstraint(std::unique_ptr<TokenConstraint> wrapped,
                     std::function<void(double seconds)> observe)
      : wrapped_(std::move(wrapped)), observe_(std::move(observe)) {}

  int64_t vocab_size() const override { return wrapped_->vocab_size(); }
  absl::Status Sync(absl::Span<const int32_t> tokens) override { return wrapped_->Sync(tokens); }
  void FillMask(TokenMask* mask) override {
    const auto start = std::chrono::steady_clock::now();
    wrapped_->FillMask(mask);
    observe_(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }

 private:
  std::unique_ptr<TokenConstraint> wrapped_;
  std::function<void(double)> observe_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_OBSERVED_CONSTRAINT_H_
