#include "core/generation/session.h"

#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/generation/acceptance.h"
#include "core/generation/gumbel_coupling.h"

namespace tandem {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> Session::Create(const Model& model, ThreadPool& pool,
                                                         const SessionOptions& options) {
  ASSIGN_OR_RETURN(Sampler sampler, Sampler::Create(options.sampler, model.config().vocab_size));
  if (options.context_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("session context_size must be >= 0, got ", options.context_size));
  }
  std::unique_ptr<Session> session(new Session(model, pool, options, std::move(sampler)));
  ASSIGN_OR_RETURN(session->cache_,
                   session->decoder_.NewCache(options.context_size, options.kv_type));
  session->cached_.reserve(session->context_size());
  session->p_.resize(model.config().vocab_size);
  return session;
}

Session::Session(const Model& model, ThreadPool& pool, const SessionOptions& options,
                 Sampler sampler)
    : options_(options), decoder_(model, pool), sampler_(std::move(sampler)) {}

absl::StatusOr<GenerationResult> Session::Generate(absl::Span<const int32_t> context,
                                                   int64_t max_tokens, TokenCallback on_token,
                                                   TokenConstraint* constraint) {
  RETURN_IF_ERROR(ValidateGenerateRequest(context, max_tokens, context_size()));
  const OutputConstraint constrained{constraint, static_cast<int64_t>(context.size())};
  // The output begins after the context: the OpenAI penalties count from there.
  sampler_.set_output_start(static_cast<int64_t>(context.size()));
  GenerationResult result;
  // (A cache whose sliding-window layers dropped the positions needed restarts from 0.)
  const int64_t reused = cache_->ResumePoint(
      std::min(CommonPrefixLength(cached_, context), static_cast<int64_t>(context.size()) - 1));
  // Positions below `reused` stay valid whatever Forward does, so shrink first.
  cached_.resize(reused);
  const auto prefill_start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(absl::Span<const float> logits,
                   decoder_.Forward(*cache_, context.subspan(reused), reused, LogitsMode::kLast));
  cached_.insert(cached_.end(), context.begin() + reused, context.end());
  result.stats.reused_tokens = reused;
  result.stats.prompt_tokens = static_cast<int64_t>(context.size()) - reused;
  result.stats.prefill_seconds = SecondsSince(prefill_start);

  const auto decode_start = std::chrono::steady_clock::now();
  StopRules rules(options_.stop_ids, max_tokens, context_size(), on_token);
  for (;;) {
    const int64_t position = static_cast<int64_t>(cached_.size());
    if (constrained.active()) RETURN_IF_ERROR(MaskAt(constrained, cached_, &mask_));
    sampler_.Distribution(logits, cached_, absl::MakeSpan(p_),
                          constrained.active() ? &mask_ : nullptr);
    const int32_t token = PickTargetToken(DistributionView::Dense(p_), sampler_.config().coupling,
                                          sampler_.config().seed, position);
    if (token < 0) {
      return absl::InternalError(
          absl::StrCat("the sampler left no candidate for position ", position));
    }
    if (std::optional<StopReason> stop = rules.Emit(token, position)) {
      result.stop_reason = *stop;
      break;
    }
    absl::StatusOr<absl::Span<const float>> next =
        decoder_.Forward(*cache_, absl::MakeConstSpan(&token, 1), position, LogitsMode::kLast);
    if (!next.ok()) return next.status();
    logits = *next;
    cached_.push_back(token);
  }
  result.stats.generated_tokens = rules.generated();
  result.stop_token = rules.stop_token();
  result.stats.decode_seconds = SecondsSince(decode_start);
  return result;
}

}  // namespace tandem
