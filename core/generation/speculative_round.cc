#include "core/generation/speculative_round.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/generation/gumbel_coupling.h"
#include "core/generation/random.h"
#include "core/generation/stop_rules.h"

namespace tandem {

void ToDraftVocabulary(absl::Span<const int32_t> tokens, int64_t vocab_size,
                       std::vector<int32_t>* out) {
  out->clear();
  for (int32_t token : tokens) {
    out->push_back(token >= 0 && token < vocab_size ? token : kDraftStandIn);
  }
}

absl::StatusOr<RunOutput> RunTokens(ForwardRunner& decoder, ModelState& state,
                                    absl::Span<const int32_t> tokens, int64_t max_reuse,
                                    LogitsMode mode) {
  RunOutput result;
  // (A cache whose sliding-window layers dropped the positions needed restarts from 0.)
  result.reused =
      state.cache->ResumePoint(std::min(CommonPrefixLength(state.cached, tokens), max_reuse));
  // Positions below `reused` stay valid whatever Forward does, so shrink first.
  state.cached.resize(result.reused);
  if (result.reused == static_cast<int64_t>(tokens.size())) return result;
  ASSIGN_OR_RETURN(result.logits, decoder.Forward(*state.cache, tokens.subspan(result.reused),
                                                  result.reused, mode));
  state.cached.insert(state.cached.end(), tokens.begin() + result.reused, tokens.end());
  return result;
}

namespace {

// The draft's guess from q at `position`: a draw from the kDraftDraw stream (standard), or
// the Gumbel pick the target makes from p with the same noise (gumbel). -1 if q has no mass.
int32_t DraftPick(const SparseDistribution& q, Coupling coupling, uint64_t seed, int64_t position) {
  if (coupling == Coupling::kGumbel) {
    return GumbelPick(DistributionView::Sparse(q), seed, position);
  }
  const int64_t drawn =
      Sampler::Draw(q.probabilities, CounterUniform(seed, position, RandomPurpose::kDraftDraw));
  return drawn < 0 ? -1 : q.ids[drawn];
}

// The standard rule over the drafted q (AcceptGuesses) for the guesses tested.
absl::StatusOr<AcceptanceResult> AcceptDrawn(absl::Span<const int32_t> guesses,
                                             absl::Span<const SparseDistribution> q,
                                             absl::Span<const DistributionView> p, uint64_t seed,
                                             int64_t first_position) {
  std::vector<DistributionView> q_views;
  for (size_t i = 0; i < guesses.size(); ++i) q_views.push_back(DistributionView::Sparse(q[i]));
  AcceptanceInput input;
  input.guesses = guesses;
  input.draft = q_views;
  input.target = p;
  input.seed = seed;
  input.first_position = first_position;
  return AcceptGuesses(input);
}

}  // namespace

absl::Status DraftGuesses(ForwardRunner& decoder, ModelState& state, Sampler& sampler,
                          absl::Span<const int32_t> sequence, int32_t k, uint64_t seed,
                          std::vector<int32_t>* guesses, std::vector<SparseDistribution>* q,
                          const OutputConstraint& constrained) {
  guesses->clear();
  if (k <= 0) return absl::OkStatus();
  if (static_cast<int32_t>(q->size()) < k) q->resize(k);
  const int64_t pending_position = static_cast<int64_t>(sequence.size()) - 1;
  std::vector<int32_t> draft_sequence;
  ToDraftVocabulary(sequence, sampler.vocab_size(), &draft_sequence);
  ASSIGN_OR_RETURN(RunOutput run,
                   RunTokens(decoder, state, draft_sequence, pending_position, LogitsMode::kLast));
  absl::Span<const float> logits = run.logits;
  // Constrained: the sequence and the guesses so far in target ids, and the next one's mask.
  std::vector<int32_t> walked;
  TokenMask mask;
  if (constrained.active()) walked.assign(sequence.begin(), sequence.end());
  for (int32_t i = 0; i < k; ++i) {
    const int64_t position = pending_position + 1 + i;
    if (constrained.active() && !MaskAt(constrained, walked, &mask).ok()) break;
    // The cache holds exactly this position's history: the sequence, then earlier guesses.
    sampler.Distribution(logits, state.cached, &(*q)[i], constrained.active() ? &mask : nullptr);
    const int32_t guess = DraftPick((*q)[i], sampler.config().coupling, seed, position);
    if (guess < 0 && constrained.active()) break;  // it allows only ids the draft lacks
    // The sampler's distributions always give the best candidate a positive probability.
    if (guess < 0) {
      return absl::InternalError(absl::StrCat("draft distribution at position ", position,
                                              " has no positive probability"));
    }
    guesses->push_back(guess);
    if (constrained.active()) walked.push_back(guess);
    if (i + 1 == k) break;  // the last guess is verified, never run by the draft
    ASSIGN_OR_RETURN(logits, decoder.Forward(*state.cache, absl::MakeConstSpan(&guess, 1), position,
                                             LogitsMode::kLast));
    state.cached.push_back(guess);
  }
  return absl::OkStatus();
}

namespace {

// Constrained verify: the masks of rows 0..*runnable into scratch->masks, walking the
// constraint through the guesses in scratch->batch (the sequence, then the runnable guesses).
// Lowers *runnable to the first guess the constraint refuses (tested, not run). A dead end
// right after the sequence is returned; one after guess j - 1 cuts the guesses to j (rows 0..j
// run, row j unmasked) and goes to *dead_end, for the round that keeps them all.
absl::Status MaskRows(const OutputConstraint& constrained, int64_t sequence_length,
                      std::vector<int32_t>* guesses, int64_t* runnable, VerifyScratch* scratch,
                      absl::Status* dead_end) {
  const absl::Span<const int32_t> batch = scratch->batch;
  for (int64_t i = 0;; ++i) {
    if (static_cast<int64_t>(scratch->masks.size()) <= i) scratch->masks.emplace_back();
    TokenMask& mask = scratch->masks[i];
    absl::Status status = MaskAt(constrained, batch.first(sequence_length + i), &mask);
    if (!status.ok()) {
      if (i == 0) return status;
      *dead_end = std::move(status);
      guesses->resize(i);
      *runnable = i;
      return absl::OkStatus();
    }
    if (i == *runnable) return absl::OkStatus();
    if (!mask.Allowed((*guesses)[i])) {
      *runnable = i;
      return absl::OkStatus();
    }
  }
}

}  // namespace

absl::StatusOr<AcceptanceResult> VerifyGuesses(ForwardRunner& decoder, ModelState& state,
                                               Sampler& sampler, absl::Span<const int32_t> sequence,
                                               std::vector<int32_t>* guesses,
                                               absl::Span<const SparseDistribution> q,
                                               uint64_t seed, VerifyScratch* scratch,
                                               const OutputConstraint& constrained) {
  const bool gumbel = sampler.config().coupling == Coupling::kGumbel;  // q is not read
  if (!gumbel && q.size() < guesses->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(guesses->size(), " guesses but ", q.size(), " draft distributions"));
  }
  const int64_t vocab = sampler.vocab_size();
  const int64_t pending_position = static_cast<int64_t>(sequence.size()) - 1;
  // The target runs guesses up to the first id outside its vocabulary; that guess is still
  // tested (p = 0 rejects it for certain), so its p row is needed but not its successor's.
  int64_t runnable = 0;
  while (runnable < static_cast<int64_t>(guesses->size()) && (*guesses)[runnable] >= 0 &&
         (*guesses)[runnable] < vocab) {
    ++runnable;
  }
  std::vector<int32_t>& batch = scratch->batch;
  batch.assign(sequence.begin(), sequence.end());
  batch.insert(batch.end(), guesses->begin(), guesses->begin() + runnable);
  absl::Status dead_end;  // constrained: a dead end after the last guess tested
  if (constrained.active()) {
    RETURN_IF_ERROR(MaskRows(constrained, sequence.size(), guesses, &runnable, scratch, &dead_end));
    batch.resize(sequence.size() + runnable);
  }
  const int64_t tested = std::min<int64_t>(runnable + 1, guesses->size());
  guesses->resize(tested);
  ASSIGN_OR_RETURN(RunOutput run,
                   RunTokens(decoder, state, batch, pending_position, LogitsMode::kAll));
  const int64_t first_row = pending_position - run.reused;  // the pending token's row

  const int64_t rows = runnable + 1;
  scratch->rows = run.logits.subspan(first_row * vocab, rows * vocab);
  if (static_cast<int64_t>(scratch->p.size()) < rows * vocab) scratch->p.resize(rows * vocab);
  // A dead end's row is never drawn from: the round that keeps every guess fails below.
  const int64_t masked_rows = dead_end.ok() ? rows : rows - 1;
  std::vector<DistributionView> p_views;
  for (int64_t i = 0; i < masked_rows; ++i) {
    // Row i predicts position pending + 1 + i from the history batch[0, pending + 1 + i).
    absl::Span<float> p = absl::MakeSpan(scratch->p).subspan(i * vocab, vocab);
    sampler.Distribution(run.logits.subspan((first_row + i) * vocab, vocab),
                         absl::MakeConstSpan(batch).first(pending_position + 1 + i), p,
                         constrained.active() ? &scratch->masks[i] : nullptr);
    p_views.push_back(DistributionView::Dense(p));
  }
  // After an out-of-vocabulary or refused guess, or before a dead end, the bonus row is never
  // read: repeat the last row.
  if (tested > runnable || !dead_end.ok()) p_views.push_back(p_views.back());
  absl::StatusOr<AcceptanceResult> result =
      gumbel ? AcceptGuessesGumbel(*guesses, p_views, seed, pending_position + 1)
             : AcceptDrawn(*guesses, q, p_views, seed, pending_position + 1);
  if (result.ok() && !dead_end.ok() && result->accepted == tested) return dead_end;
  return result;
}

absl::Status ContinueAlone(ForwardRunner& decoder, ModelState& state, Sampler& sampler,
                           int32_t first, int32_t steps, uint64_t seed, VerifyScratch* scratch,
                           std::vector<int32_t>* tokens, const OutputConstraint& constrained) {
  tokens->clear();
  const int64_t vocab = sampler.vocab_size();
  if (static_cast<int64_t>(scratch->p.size()) < vocab) scratch->p.resize(vocab);
  if (scratch->masks.empty()) scratch->masks.emplace_back();
  const absl::Span<float> p = absl::MakeSpan(scratch->p).first(vocab);
  int32_t token = first;
  for (int32_t i = 0; i < steps; ++i) {
    const int64_t position = static_cast<int64_t>(state.cached.size());
    if (position >= state.cache->shape().context_size) break;  // no room to run `token`
    ASSIGN_OR_RETURN(
        absl::Span<const float> logits,
        decoder.Forward(*state.cache, absl::MakeConstSpan(&token, 1), position, LogitsMode::kLast));
    state.cached.push_back(token);
    // A dead end (or a refused token) stops here: the next verify reports it.
    if (constrained.active() && !MaskAt(constrained, state.cached, &scratch->masks[0]).ok()) break;
    sampler.Distribution(logits, state.cached, p,
                         constrained.active() ? &scratch->masks[0] : nullptr);
    token =
        PickTargetToken(DistributionView::Dense(p), sampler.config().coupling, seed, position + 1);
    if (token < 0) {
      return absl::InternalError(
          absl::StrCat("the sampler left no candidate for position ", position + 1));
    }
    tokens->push_back(token);
  }
  return absl::OkStatus();
}

}  // namespace tandem
