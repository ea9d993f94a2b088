#include "core/generation/round_backends.h"

#include <utility>

namespace tandem {

std::future<absl::Status> ReadyFuture(absl::Status status) {
  std::promise<absl::Status> promise;
  promise.set_value(std::move(status));
  return promise.get_future();
}

}  // namespace tandem
