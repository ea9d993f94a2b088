// libFuzzer target for the sampler settings: fuzz bytes become a SamplerConfig, finite logits
// and a context (sampler_fuzz_input.h). Create must either refuse the settings with
// kInvalidArgument, or the sampler must behave on them:
//  - Sample and SampleWithUniform return an id in [0, vocab) that the distribution keeps;
//    greedy (temperature 0) without a penalty or a logit_bias returns the arg max, lowest id
//    on ties;
//  - both Distribution forms give finite probabilities in [0, 1] summing to 1 (within 1e-3),
//    the sparse ids strictly increasing and equal to the dense form's non-zero entries;
//  - Draw over non-negative weights returns -1 exactly when none is positive, else an index
//    whose weight is positive;
//  - GumbelPick picks a token the distribution keeps, the same from the dense and sparse form.
// TANDEM_FUZZ_VERBOSE=1 prints each case before it runs (for replaying a reproducer).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/base/fuzz_assert.h"
#include "core/generation/fuzz/sampler_fuzz_input.h"
#include "core/generation/gumbel_coupling.h"
#include "core/generation/sampler.h"

namespace tandem {
namespace {

void PrintCase(const fuzzing::SamplerCase& c) {
  std::fprintf(stderr,
               "vocab %lld temperature %g top_k %d top_p %g min_p %g repetition_penalty %g "
               "penalty_window %d context %zu presence %g frequency %g output_start %lld "
               "logit_bias %zu\n",
               static_cast<long long>(c.vocab_size), c.config.temperature, c.config.top_k,
               c.config.top_p, c.config.min_p, c.config.repetition_penalty, c.config.penalty_window,
               c.context.size(), c.config.presence_penalty, c.config.frequency_penalty,
               static_cast<long long>(c.config.output_start), c.config.logit_bias.size());
}

#define CHECK_CASE(condition, ...)              \
  do {                                          \
    if (!(condition)) PrintCase(c);             \
    TANDEM_FUZZ_ASSERT(condition, __VA_ARGS__); \
  } while (0)

void CheckDistributions(const fuzzing::SamplerCase& c, Sampler& sampler, int32_t sampled) {
  std::vector<float> dense(c.vocab_size);
  sampler.Distribution(c.logits, c.context, absl::MakeSpan(dense));
  double sum = 0;
  for (int64_t i = 0; i < c.vocab_size; ++i) {
    CHECK_CASE(std::isfinite(dense[i]) && dense[i] >= 0 && dense[i] <= 1.0f + 1e-6f,
               "probability[%lld] = %g", static_cast<long long>(i), dense[i]);
    sum += dense[i];
  }
  CHECK_CASE(std::fabs(sum - 1) < 1e-3, "probabilities sum to %g", sum);

  SparseDistribution sparse;
  sampler.Distribution(c.logits, c.context, &sparse);
  CHECK_CASE(!sparse.ids.empty() && sparse.ids.size() == sparse.probabilities.size(),
             "sparse distribution with %zu ids, %zu probabilities", sparse.ids.size(),
             sparse.probabilities.size());
  size_t next = 0;
  bool has_sampled = false;
  for (size_t j = 0; j < sparse.ids.size(); ++j) {
    const int32_t id = sparse.ids[j];
    CHECK_CASE(id >= 0 && id < c.vocab_size && (j == 0 || id > sparse.ids[j - 1]),
               "sparse id %d at %zu", id, j);
    for (; static_cast<int32_t>(next) < id; ++next) {
      CHECK_CASE(dense[next] == 0, "dense probability %g of %zu missing from the sparse form",
                 dense[next], next);
    }
    ++next;
    CHECK_CASE(sparse.probabilities[j] == dense[id], "id %d: sparse %g, dense %g", id,
               sparse.probabilities[j], dense[id]);
    has_sampled = has_sampled || id == sampled;
  }
  CHECK_CASE(has_sampled, "sampled id %d is not in the distribution", sampled);
  // Gumbel coupling's pick is one token of the support, the same from either form.
  const int32_t pick = GumbelPick(DistributionView::Sparse(sparse), c.config.seed, c.position);
  CHECK_CASE(pick >= 0 && pick < c.vocab_size && dense[pick] > 0, "Gumbel pick %d", pick);
  CHECK_CASE(pick == GumbelPick(DistributionView::Dense(dense), c.config.seed, c.position),
             "Gumbel pick %d from the sparse form differs from the dense form's", pick);
}

void CheckDraw(const fuzzing::SamplerCase& c) {
  std::vector<float> weights(c.logits.size());
  bool any_positive = false;
  for (size_t i = 0; i < weights.size(); ++i) {
    weights[i] = std::fabs(c.logits[i]) < 1e30f ? std::fabs(c.logits[i]) : 0.0f;
    if (i % 3 == 0) weights[i] = 0;  // sparse weights
    any_positive = any_positive || weights[i] > 0;
  }
  const int64_t index = Sampler::Draw(weights, c.uniform);
  if (!any_positive) {
    TANDEM_FUZZ_ASSERT(index == -1, "Draw over zero weights gave %lld",
                       static_cast<long long>(index));
  } else {
    TANDEM_FUZZ_ASSERT(
        index >= 0 && index < static_cast<int64_t>(weights.size()) && weights[index] > 0,
        "Draw gave %lld", static_cast<long long>(index));
  }
}

}  // namespace
}  // namespace tandem

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  const fuzzing::SamplerCase c = fuzzing::DecodeSamplerCase(data, size);
  // A CHECK inside the sampler aborts before any property can print the case: replaying a
  // reproducer with TANDEM_FUZZ_VERBOSE=1 prints it first.
  static const bool verbose = std::getenv("TANDEM_FUZZ_VERBOSE") != nullptr;
  if (verbose) PrintCase(c);
  CheckDraw(c);
  absl::StatusOr<Sampler> created = Sampler::Create(c.config, c.vocab_size);
  if (!created.ok()) {
    CHECK_CASE(created.status().code() == absl::StatusCode::kInvalidArgument, "Create gave %s",
               created.status().ToString().c_str());
    return 0;
  }
  Sampler& sampler = *created;
  const int32_t sampled = sampler.Sample(c.logits, c.context, c.position);
  CHECK_CASE(sampled >= 0 && sampled < c.vocab_size, "Sample gave %d", sampled);
  const int32_t with_uniform = sampler.SampleWithUniform(c.logits, c.context, c.uniform);
  CHECK_CASE(with_uniform >= 0 && with_uniform < c.vocab_size, "SampleWithUniform gave %d",
             with_uniform);
  // Without a step that moves logits: no repetition penalty over a context, no logit_bias, no
  // OpenAI penalty over generated tokens.
  const bool unmoved = (c.config.repetition_penalty == 1.0f || c.context.empty()) &&
                       c.config.logit_bias.empty() &&
                       ((c.config.presence_penalty == 0 && c.config.frequency_penalty == 0) ||
                        static_cast<int64_t>(c.context.size()) <= c.config.output_start);
  if (sampler.greedy() && unmoved) {
    int32_t best = 0;
    for (int32_t i = 1; i < c.vocab_size; ++i) {
      if (c.logits[i] > c.logits[best]) best = i;
    }
    CHECK_CASE(sampled == best, "greedy gave %d, the arg max is %d", sampled, best);
  }
  CheckDistributions(c, sampler, sampled);
  CheckDistributions(c, sampler, with_uniform);
  return 0;
}
