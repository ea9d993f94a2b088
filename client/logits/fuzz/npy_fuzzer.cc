// libFuzzer target for the .npy reader (tandem-logits reads references users give it).
// Properties: ParseNpy fails only with kDataLoss, kUnimplemented or kResourceExhausted, the
// message naming the file; a parsed array holds exactly product(shape) values; an f4 array
// written back by EncodeNpyF32 parses to the same shape and values; comparing a 2-D array
// with itself gives max abs 0 (NaN when it holds NaN or infinities) and full argmax
// agreement, and KL of it against itself never crashes. Nothing may crash or hang.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "client/logits/logits_metrics.h"
#include "client/logits/npy.h"
#include "core/base/fuzz_assert.h"

namespace tandem {
namespace {

constexpr absl::string_view kName = "fuzz.npy";

void CheckRefusal(const absl::Status& status) {
  const absl::StatusCode code = status.code();
  TANDEM_FUZZ_ASSERT(code == absl::StatusCode::kDataLoss ||
                         code == absl::StatusCode::kUnimplemented ||
                         code == absl::StatusCode::kResourceExhausted,
                     "ParseNpy gave %s", status.ToString().c_str());
  TANDEM_FUZZ_ASSERT(absl::StartsWith(status.message(), "fuzz.npy: "), "message %s",
                     status.ToString().c_str());
}

bool SameValue(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

void CheckRoundTrip(const NpyArray& array) {
  const std::vector<float> floats(array.values.begin(), array.values.end());
  absl::StatusOr<std::string> encoded = EncodeNpyF32(array.shape, floats);
  TANDEM_FUZZ_ASSERT(encoded.ok(), "EncodeNpyF32 gave %s", encoded.status().ToString().c_str());
  absl::StatusOr<NpyArray> back = ParseNpy(*encoded, kName);
  TANDEM_FUZZ_ASSERT(back.ok(), "re-parse gave %s", back.status().ToString().c_str());
  TANDEM_FUZZ_ASSERT(back->shape == array.shape, "shape changed");
  for (size_t i = 0; i < array.values.size(); ++i) {
    TANDEM_FUZZ_ASSERT(SameValue(back->values[i], array.values[i]), "value %zu changed", i);
  }
}

void CheckMetrics(const NpyArray& array) {
  if (array.shape.size() != 2 || array.values.empty()) return;
  const int64_t rows = array.shape[0], cols = array.shape[1];
  absl::StatusOr<LogitsComparison> c = CompareLogits(array.values, array.values, rows, cols);
  TANDEM_FUZZ_ASSERT(c.ok(), "CompareLogits gave %s", c.status().ToString().c_str());
  TANDEM_FUZZ_ASSERT(c->max_abs == 0 || std::isnan(c->max_abs), "max abs %g", c->max_abs);
  TANDEM_FUZZ_ASSERT(c->argmax_agree == rows, "argmax agrees at %lld of %lld rows",
                     static_cast<long long>(c->argmax_agree), static_cast<long long>(rows));
  absl::StatusOr<KlStats> kl = KlDivergence(array.values, array.values, rows, cols);
  TANDEM_FUZZ_ASSERT(kl.ok(), "KlDivergence gave %s", kl.status().ToString().c_str());
  TANDEM_FUZZ_ASSERT(kl->top_agree == rows, "top agreement");
}

}  // namespace
}  // namespace tandem

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<NpyArray> array = ParseNpy(bytes, kName);
  if (!array.ok()) {
    CheckRefusal(array.status());
    return 0;
  }
  int64_t count = 1;
  for (int64_t dim : array->shape) count *= dim;
  TANDEM_FUZZ_ASSERT(count == static_cast<int64_t>(array->values.size()), "%lld values for %zu",
                     static_cast<long long>(count), array->values.size());
  if (array->dtype == NpyDtype::kF32) CheckRoundTrip(*array);
  CheckMetrics(*array);
  return 0;
}
