#include "core/generation/speculative_session.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/generation/draft_cost_model.h"
#include "core/generation/in_process_backends.h"
#include "core/generation/round_driver.h"
#include "core/generation/vocab_compatibility.h"

namespace tandem {
namespace {

std::unique_ptr<DraftLengthPolicy> NewDraftLengthPolicy(const SpeculativeOptions& options) {
  if (!options.adaptive) {
    return std::make_unique<FixedDraftLength>(options.draft_tokens);
  }
  DraftCostOptions cost;
  cost.max_draft_tokens = options.max_draft_tokens;
  cost.compute_only = true;  // both models run on this thread, timed by the steady clock
  return std::make_unique<DraftCostModel>(cost, options.draft_tokens);
}

}  // namespace

SpeculativeSession::Side::Side(const Model& model, ThreadPool& pool, Sampler sampler)
    : decoder(model, pool), sampler(std::move(sampler)) {}

absl::StatusOr<std::unique_ptr<SpeculativeSession>> SpeculativeSession::Create(
    const Model& target, const Model& draft, ThreadPool& pool, const SpeculativeOptions& options) {
  RETURN_IF_ERROR(CheckDraftCompatible(target, draft));
  if (options.max_draft_tokens < 1 || options.draft_tokens < 1 ||
      options.draft_tokens > options.max_draft_tokens) {
    return absl::InvalidArgumentError(
        absl::StrCat("draft_tokens must be in [1, max_draft_tokens = ", options.max_draft_tokens,
                     "], got ", options.draft_tokens));
  }
  if (options.session.context_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("session context_size must be >= 0, got ", options.session.context_size));
  }
  const SamplerConfig& config = options.session.sampler;
  ASSIGN_OR_RETURN(Sampler target_sampler, Sampler::Create(config, target.config().vocab_size));
  ASSIGN_OR_RETURN(Sampler draft_sampler, Sampler::Create(config, draft.config().vocab_size));
  std::unique_ptr<SpeculativeSession> session(new SpeculativeSession(
      target, draft, pool, options, std::move(target_sampler), std::move(draft_sampler)));
  const int64_t context_size = options.session.context_size > 0 ? options.session.context_size
                                                                : target.config().context_length;
  const KvType kv = options.session.kv_type;
  ASSIGN_OR_RETURN(session->target_.state.cache,
                   session->target_.decoder.NewCache(context_size, kv));
  ASSIGN_OR_RETURN(session->draft_.state.cache, session->draft_.decoder.NewCache(context_size, kv));
  return session;
}

SpeculativeSession::SpeculativeSession(const Model& target, const Model& draft, ThreadPool& pool,
                                       const SpeculativeOptions& options, Sampler target_sampler,
                                       Sampler draft_sampler)
    : options_(options),
      target_(target, pool, std::move(target_sampler)),
      draft_(draft, pool, std::move(draft_sampler)),
      k_policy_(NewDraftLengthPolicy(options)) {}

void SpeculativeSession::Reset() {
  target_.state.cached.clear();
  draft_.state.cached.clear();
}

void SpeculativeSession::set_seed(uint64_t seed) {
  options_.session.sampler.seed = seed;
  target_.sampler.set_seed(seed);
  draft_.sampler.set_seed(seed);
}

absl::StatusOr<GenerationResult> SpeculativeSession::Generate(
    absl::Span<const int32_t> context, int64_t max_tokens, TokenCallback on_token,
    const SpeculativeConstraints& constraints) {
  RETURN_IF_ERROR(ValidateGenerateRequest(context, max_tokens, context_size()));
  const uint64_t seed = options_.session.sampler.seed;
  // Only the cost model reads the calls' times.
  const bool timed = options_.adaptive;
  // The output begins after the context.
  const int64_t start = static_cast<int64_t>(context.size());
  target_.sampler.set_output_start(start);  // the OpenAI penalties count from there
  draft_.sampler.set_output_start(start);
  InProcessTarget target(target_.decoder, target_.state, target_.sampler, seed, &verify_scratch_,
                         timed, OutputConstraint{constraints.target, start});
  InProcessDraft draft(draft_.decoder, draft_.state, draft_.sampler, seed, timed,
                       OutputConstraint{constraints.draft, start});
  RoundDriverOptions driver_options;
  driver_options.pipelined = options_.pipelined;
  driver_options.forced_tokens = constraints.forced_tokens;
  RoundDriver driver(target, &draft, /*fallback=*/nullptr, *k_policy_, driver_options);
  RoundLimits limits;
  limits.stop_ids = options_.session.stop_ids;
  limits.max_tokens = max_tokens;
  limits.context_size = context_size();
  sequence_.assign(context.begin(), context.end());
  // The driver reports a round's tokens at once; the callback sees them one by one and may
  // stop after any.
  auto each_token = [&](std::vector<int32_t>& tokens) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (!on_token(tokens[i])) {
        tokens.resize(i + 1);
        return false;
      }
    }
    return true;
  };
  return driver.Generate(sequence_, limits, each_token);
}

}  // namespace tandem
