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
  ASSIGN_OR_RETURN(session->target_.cache, session->target_.decoder.NewCache(context_size, kv));
  ASSIGN_OR_RETURN(session->draft_.cache, session->draft_.decoder.NewCache(context_size, kv));
  return session;
}

SpeculativeSession::SpeculativeSession(const Model& target, const Model& draft, ThreadPool& pool,
                                       const SpeculativeOptions& options, Sampler target_sampler,
                                       Sampler draft_sampler)
    : options_(options),
      target_(target, pool, std::move(target_sampler)),
      draft_(draft, pool, std::move(draft_sampler)),
      k_(options.draft_tokens) {}

void SpeculativeSession::Reset() {
  target_.cached.clear();
  draft_.cached.clear();
}

void SpeculativeSession::set_seed(uint64_t seed) {
  options_.session.sampler.seed = seed;
  target_.sampler.set_seed(seed);
  draft_.sampler.set_seed(seed);
}

absl::StatusOr<SpeculativeSession::RunResult> SpeculativeSession::Run(
    Side& side, absl::Span<const int32_t> tokens, int64_t max_reuse, LogitsMode mode) {
  RunResult result;
  result.reused = std::min(CommonPrefixLength(side.cached, tokens), max_reuse);
  // Positions below `reused` stay valid whatever Forward does, so shrink first.
  side.cached.resize(result.reused);
  if (result.reused == static_cast<int64_t>(tokens.size())) return result;
  ASSIGN_OR_RETURN(result.logits, side.decoder.Forward(*side.cache, tokens.subspan(result.reused),
                                                       result.reused, mode));
  side.cached.insert(side.cached.end(), tokens.begin() + result.reused, tokens.end());
  return result;
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
  ASSIGN_OR_RETURN(RunResult target_run, Run(target_, context.first(n), n, LogitsMode::kLast));
  RETURN_IF_ERROR(Run(draft_, ForDraft(context.first(n)), n, LogitsMode::kLast).status());
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
    RETURN_IF_ERROR(Draft(static_cast<int32_t>(std::max<int64_t>(k, 0))));
    ASSIGN_OR_RETURN(AcceptanceResult verdict, Verify());
    RecordRound(static_cast<int32_t>(guesses_.size()), verdict.accepted, result.speculation);
    for (int32_t i = 0; i <= verdict.accepted && !stop; ++i) {
      const int32_t token = i < verdict.accepted ? guesses_[i] : verdict.next_token;
      stop = rules.Emit(token, static_cast<int64_t>(sequence_.size()));
      if (!stop) sequence_.push_back(token);
    }
  }
  result.stop_reason = *stop;
  result.stats.generated_tokens = rules.generated();
  result.stats.decode_seconds = SecondsSince(decode_start);
  return result;
}

absl::Span<const int32_t> SpeculativeSession::ForDraft(absl::Span<const int32_t> tokens) {
  const int64_t vocab = draft_.sampler.vocab_size();
  draft_input_.clear();
  for (int32_t token : tokens) draft_input_.push_back(token < vocab ? token : kDraftStandIn);
  return draft_input_;
}

absl::Status SpeculativeSession::Draft(int32_t k) {
  guesses_.clear();
  if (k == 0) return absl::OkStatus();
  if (static_cast<int32_t>(q_.size()) < k) q_.resize(k);
  const int64_t pending_position = static_cast<int64_t>(sequence_.size()) - 1;
  ASSIGN_OR_RETURN(RunResult run,
                   Run(draft_, ForDraft(sequence_), pending_position, LogitsMode::kLast));
  absl::Span<const float> logits = run.logits;
  for (int32_t i = 0; i < k; ++i) {
    const int64_t position = pending_position + 1 + i;
    // The draft's cache holds exactly this position's history: the sequence, earlier guesses.
    draft_.sampler.Distribution(logits, draft_.cached, &q_[i]);
    const double u =
        CounterUniform(options_.session.sampler.seed, position, RandomPurpose::kDraftDraw);
    const int32_t guess = q_[i].ids[Sampler::Draw(q_[i].probabilities, u)];
    guesses_.push_back(guess);
    if (i + 1 == k) break;  // the last guess is verified, never run by the draft
    ASSIGN_OR_RETURN(logits, draft_.decoder.Forward(*draft_.cache, absl::MakeConstSpan(&guess, 1),
                                                    position, LogitsMode::kLast));
    draft_.cached.push_back(guess);
  }
  return absl::OkStatus();
}

absl::StatusOr<AcceptanceResult> SpeculativeSession::Verify() {
  const int64_t vocab = target_.sampler.vocab_size();
  const int64_t pending_position = static_cast<int64_t>(sequence_.size()) - 1;
  // The target runs guesses up to the first id outside its vocabulary; that guess is still
  // tested (p = 0 rejects it for certain), so its p row is needed but not its successor's.
  int64_t runnable = 0;
  while (runnable < static_cast<int64_t>(guesses_.size()) && guesses_[runnable] < vocab) {
    ++runnable;
  }
  const int64_t tested = std::min<int64_t>(runnable + 1, guesses_.size());
  guesses_.resize(tested);
  batch_.assign(sequence_.begin(), sequence_.end());
  batch_.insert(batch_.end(), guesses_.begin(), guesses_.begin() + runnable);
  ASSIGN_OR_RETURN(RunResult run, Run(target_, batch_, pending_position, LogitsMode::kAll));
  const int64_t first_row = pending_position - run.reused;  // the pending token's row

  const int64_t rows = runnable + 1;
  if (static_cast<int64_t>(p_.size()) < rows * vocab) p_.resize(rows * vocab);
  std::vector<DistributionView> p_views;
  std::vector<DistributionView> q_views;
  for (int64_t i = 0; i < rows; ++i) {
    // Row i predicts position pending + 1 + i from the history batch_[0, pending + 1 + i).
    absl::Span<float> p = absl::MakeSpan(p_).subspan(i * vocab, vocab);
    target_.sampler.Distribution(run.logits.subspan((first_row + i) * vocab, vocab),
                                 absl::MakeConstSpan(batch_).first(pending_position + 1 + i), p);
    p_views.push_back(DistributionView::Dense(p));
  }
  // After an out-of-vocabulary guess the bonus row is never read: repeat the last row.
  if (tested > runnable) p_views.push_back(p_views.back());
  for (int64_t i = 0; i < tested; ++i) q_views.push_back(DistributionView::Sparse(q_[i]));

  AcceptanceInput input;
  input.guesses = guesses_;
  input.draft = q_views;
  input.target = p_views;
  input.seed = options_.session.sampler.seed;
  input.first_position = pending_position + 1;
  return AcceptGuesses(input);
}

void SpeculativeSession::RecordRound(int32_t drafted, int32_t accepted, SpeculationStats& stats) {
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
  // Adaptive k: a round that kept everything asked for earns one more guess; one that kept
  // less than half costs one.
  if (!options_.adaptive || drafted == 0 || drafted < k_) return;
  if (accepted == drafted) {
    k_ = std::min(k_ + 1, options_.max_draft_tokens);
  } else if (2 * accepted < drafted) {
    k_ = std::max(k_ - 1, 1);
  }
}

}  // namespace tandem
