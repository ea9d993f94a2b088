#include "core/generation/speculative_session.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/generation/random.h"
#include "core/generation/vocab_compatibility.h"

namespace tandem {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

DraftCostOptions CostOptions(const SpeculativeOptions& options) {
  DraftCostOptions cost;
  cost.max_draft_tokens = options.max_draft_tokens;
  return cost;
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
      k_(options.draft_tokens),
      cost_(CostOptions(options), options.draft_tokens) {}

void SpeculativeSession::Reset() {
  target_.state.cached.clear();
  draft_.state.cached.clear();
}

void SpeculativeSession::set_seed(uint64_t seed) {
  options_.session.sampler.seed = seed;
  target_.sampler.set_seed(seed);
  draft_.sampler.set_seed(seed);
}

absl::StatusOr<GenerationResult> SpeculativeSession::Generate(absl::Span<const int32_t> context,
                                                              int64_t max_tokens,
                                                              TokenCallback on_token) {
  RETURN_IF_ERROR(ValidateGenerateRequest(context, max_tokens, context_size()));
  GenerationResult result;
  // Prefill both models up to the pending token (the context's last), which the first round
  // runs.
  const int64_t n = static_cast<int64_t>(context.size()) - 1;
  const auto prefill_start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(RunOutput target_run, RunTokens(target_.decoder, target_.state, context.first(n),
                                                   n, LogitsMode::kLast));
  ToDraftVocabulary(context.first(n), draft_.sampler.vocab_size(), &draft_input_);
  RETURN_IF_ERROR(
      RunTokens(draft_.decoder, draft_.state, draft_input_, n, LogitsMode::kLast).status());
  result.stats.reused_tokens = target_run.reused;
  result.stats.prompt_tokens = static_cast<int64_t>(context.size()) - target_run.reused;
  result.stats.prefill_seconds = SecondsSince(prefill_start);

  const auto decode_start = std::chrono::steady_clock::now();
  sequence_.assign(context.begin(), context.end());
  StopRules rules(options_.session.stop_ids, max_tokens, context_size(), on_token);
  std::optional<StopReason> stop;
  while (!stop) {
    const int64_t pending_position = static_cast<int64_t>(sequence_.size()) - 1;
    // No more guesses than the cache can verify or the limit can use.
    const int64_t k = std::min<int64_t>(
        {k_, context_size() - 1 - pending_position, max_tokens - rules.generated() - 1});
    const uint64_t seed = options_.session.sampler.seed;
    // Only the cost model reads the clock (a thread CPU clock read costs about 1 us).
    const double draft_start = options_.adaptive && k > 0 ? ThreadCpuSeconds() : 0;
    RETURN_IF_ERROR(DraftGuesses(draft_.decoder, draft_.state, draft_.sampler, sequence_,
                                 static_cast<int32_t>(std::max<int64_t>(k, 0)), seed, &guesses_,
                                 &q_));
    const double verify_start = options_.adaptive ? ThreadCpuSeconds() : 0;
    ASSIGN_OR_RETURN(AcceptanceResult verdict,
                     VerifyGuesses(target_.decoder, target_.state, target_.sampler, sequence_,
                                   &guesses_, q_, seed, &verify_scratch_));
    RecordRound(static_cast<int32_t>(guesses_.size()), verdict.accepted, draft_start, verify_start,
                result.speculation);
    for (int32_t i = 0; i <= verdict.accepted && !stop; ++i) {
      const int32_t token = i < verdict.accepted ? guesses_[i] : verdict.next_token;
      stop = rules.Emit(token, static_cast<int64_t>(sequence_.size()));
      if (!stop) sequence_.push_back(token);
    }
  }
  result.stop_reason = *stop;
  result.stats.generated_tokens = rules.generated();
  result.stop_token = rules.stop_token();
  result.stats.decode_seconds = SecondsSince(decode_start);
  result.speculation.final_draft_tokens = k_;
  if (options_.adaptive) result.speculation.cost_model = cost_.Estimates();
  return result;
}

void SpeculativeSession::RecordRound(int32_t drafted, int32_t accepted, double draft_start,
                                     double verify_start, SpeculationStats& stats) {
  ++stats.rounds;
  stats.drafted += drafted;
  stats.accepted += accepted;
  stats.round_tokens += accepted + 1;
  if (static_cast<int32_t>(stats.drafted_per_position.size()) < drafted) {
    stats.drafted_per_position.resize(drafted);
    stats.accepted_per_position.resize(drafted);
  }
  for (int32_t i = 0; i < drafted; ++i) ++stats.drafted_per_position[i];
  for (int32_t i = 0; i < accepted; ++i) ++stats.accepted_per_position[i];
  if (!options_.adaptive) return;
  RoundTiming timing;
  timing.drafted = drafted;
  timing.accepted = accepted;
  timing.produced = accepted + 1;
  timing.draft_seconds = timing.draft_compute_seconds =
      drafted > 0 ? verify_start - draft_start : 0;
  timing.verify_seconds = timing.verify_compute_seconds = ThreadCpuSeconds() - verify_start;
  cost_.Record(timing);
  k_ = cost_.k();
}

}  // namespace tandem
