#include "core/generation/draft_cost_model.h"

#include <time.h>

#include <algorithm>

#include "core/generation/generation_result.h"

namespace tandem {

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

namespace {

// a_i, positions past the estimates taking the last one.
double Acceptance(const DraftCostEstimates& e, int32_t i) {
  if (e.acceptance.empty()) return 0;
  return e.acceptance[std::min<size_t>(i, e.acceptance.size() - 1)];
}

// D(k) and V(k): the seconds of a round's draft and verify parts.
double DraftPart(const DraftCostEstimates& e, int32_t k) {
  return e.draft_overhead_seconds + k * e.draft_token_seconds;
}
double VerifyPart(const DraftCostEstimates& e, int32_t k) {
  return e.verify_base_seconds + e.verify_row_seconds * (k + 1) + e.verify_overhead_seconds;
}

double AloneTokensPerSecond(const DraftCostEstimates& e) {
  const double t0 = e.alone_token_seconds > 0
                        ? e.alone_token_seconds
                        : e.verify_base_seconds + e.verify_row_seconds + e.verify_overhead_seconds;
  return t0 > 0 ? 1 / t0 : 0;
}

}  // namespace

double ExpectedRoundTokens(const DraftCostEstimates& e, int32_t k) {
  double tokens = 1, all_kept = 1;
  for (int32_t i = 0; i < k; ++i) {
    all_kept *= Acceptance(e, i);
    tokens += all_kept;
  }
  return tokens;
}

double SequentialTokensPerSecond(const DraftCostEstimates& e, int32_t k) {
  if (k == 0) return AloneTokensPerSecond(e);
  const double seconds = DraftPart(e, k) + VerifyPart(e, k) + e.round_overhead_seconds;
  return seconds > 0 ? ExpectedRoundTokens(e, k) / seconds : 0;
}

double PipelinedTokensPerSecond(const DraftCostEstimates& e, int32_t k) {
  if (k == 0) return AloneTokensPerSecond(e);
  // h: every guess kept and the draft's stand-in for the bonus token right.
  double hit = 1;
  for (int32_t i = 0; i <= k; ++i) hit *= Acceptance(e, i);
  // Each draft call asks one guess more (the stand-in); the next round's call runs during the
  // verify and is waited for, so a round takes max(D, V), and one after a miss first drafts.
  const double draft = DraftPart(e, k + 1), verify = VerifyPart(e, k);
  const double seconds = std::max(draft, verify) + (1 - hit) * draft + e.round_overhead_seconds;
  return seconds > 0 ? ExpectedRoundTokens(e, k) / seconds : 0;
}

double TokensPerSecond(const DraftCostEstimates& e, int32_t k, bool pipelined) {
  return pipelined ? PipelinedTokensPerSecond(e, k) : SequentialTokensPerSecond(e, k);
}

bool GuessingCanPay(const DraftCostEstimates& e, int32_t max_k, bool pipelined, double margin) {
  DraftCostEstimates all_kept = e;
  all_kept.acceptance.assign(1, 1.0);
  const int32_t k = BestDraftTokens(all_kept, 1, max_k, pipelined);
  return TokensPerSecond(all_kept, k, pipelined) > (1 + margin) * AloneTokensPerSecond(e);
}

int32_t BestDraftTokens(const DraftCostEstimates& e, int32_t min_k, int32_t max_k, bool pipelined) {
  int32_t best = min_k;
  double best_rate = -1;
  for (int32_t k = min_k; k <= max_k; ++k) {
    const double rate = TokensPerSecond(e, k, pipelined);
    if (rate > best_rate) {
      best = k;
      best_rate = rate;
    }
  }
  return best;
}

DraftCostModel::DraftCostModel(const DraftCostOptions& options, int32_t initial_k)
    : options_(options),
      probe_interval_(options.probe_after_rounds),
      k_(std::clamp(initial_k, 1, std::max(1, options.max_draft_tokens))),
      acceptance_(std::max(1, options.max_draft_tokens) + 1),
      verify_by_rows_(std::max(1, options.max_draft_tokens) + 1) {}

void DraftCostModel::RecordAcceptance(int32_t drafted, int32_t accepted) {
  // Guess i was tested when all before it were kept (i <= accepted).
  const int32_t tested =
      std::min({drafted, accepted + 1, static_cast<int32_t>(acceptance_.size())});
  for (int32_t i = 0; i < tested; ++i) {
    Mean& a = acceptance_[i];
    if (!a.known()) {
      // A new position starts from its predecessor's estimate, worth one observation.
      a.sum = i == 0 ? options_.prior_acceptance : acceptance_[i - 1].value();
      a.weight = 1;
    }
    a.Add(i < accepted ? 1.0 : 0.0, options_.acceptance_decay);
  }
}

void DraftCostModel::Observe(const RoundReport& report) {
  RoundReport round = report;
  if (options_.compute_only) {
    round.draft_seconds = round.draft_compute_seconds;
    round.verify_seconds = round.verify_compute_seconds;
  }
  ++rounds_;
  const double decay = options_.timing_decay;
  // After two rounds without guesses the draft first ran the tokens it missed.
  const bool caught_up = rounds_ > 2 && last_drafted_ == 0 && drafted_before_ == 0;
  drafted_before_ = last_drafted_;
  last_drafted_ = round.drafted;
  if (round.drafted > 0) {
    // A tested stand-in is one guess more (pipelined rounds hit only when it is right).
    const int32_t standin = round.standin_tested ? 1 : 0;
    RecordAcceptance(round.drafted + standin,
                     round.accepted + (round.standin_tested && round.standin_kept ? 1 : 0));
    ++rounds_with_guesses_;
  }
  if (round.drafted > 0 && !caught_up) {
    draft_token_.AddTime(round.draft_compute_seconds / round.drafted, decay);
    draft_overhead_.AddTime(std::max(0.0, round.draft_seconds - round.draft_compute_seconds),
                            decay);
    verify_overhead_.AddTime(std::max(0.0, round.verify_seconds - round.verify_compute_seconds),
                             decay);
  }
  const int32_t yielded = std::max(1, round.yielded);
  const size_t rows = std::min<size_t>(round.drafted + 1, verify_by_rows_.size());
  if (round.drafted == 0) {
    // A round of the target alone (perhaps continuing several tokens): per token.
    verify_by_rows_[0].AddTime(round.verify_compute_seconds / yielded, decay);
    // Remote, the whole round is the target alone's cost: its call and the work between.
    const bool whole = !options_.compute_only && round.round_seconds > round.verify_seconds;
    alone_token_.AddTime((whole ? round.round_seconds : round.verify_seconds) / yielded, decay);
    if (whole) round_overhead_.AddTime(round.round_seconds - round.verify_seconds, decay);
  } else {
    verify_by_rows_[rows - 1].AddTime(round.verify_compute_seconds, decay);
  }
  k_ = Choose(Estimates());
}

void DraftCostModel::Report(SpeculationStats& stats) const { stats.cost_model = Estimates(); }

int32_t DraftCostModel::Choose(const DraftCostEstimates& e) {
  const int32_t max_k = std::max(1, options_.max_draft_tokens);
  if (!draft_token_.known()) return k_;  // nothing drafted yet: the caller's k
  if (!alone_token_.known()) return 0;   // measure the target alone once
  if (probes_left_ > 0) {
    --probes_left_;
    return std::max(1, BestDraftTokens(e, 1, max_k, options_.pipelined));
  }
  // The best k > 0 against the target alone (which wins ties, as k = 0 in BestDraftTokens).
  const int32_t guess = BestDraftTokens(e, 1, max_k, options_.pipelined);
  const double rate = TokensPerSecond(e, guess, options_.pipelined);
  const double alone = AloneTokensPerSecond(e);
  const int32_t best = rate > alone || KeepGuessing(e, max_k, rate, alone) ? guess : 0;
  if (best > 0) {
    speculating_ = true;
    rounds_alone_ = 0;
    probes_in_vain_ = 0;
    probe_interval_ = options_.probe_after_rounds;
    if (++rounds_guessed_ <= options_.remeasure_alone_after_rounds) return best;
    rounds_guessed_ = 0;
    return 0;  // the target alone's rate may have changed: re-measure it
  }
  rounds_guessed_ = 0;
  speculating_ = false;
  if (++rounds_alone_ <= probe_interval_) return 0;
  rounds_alone_ = 0;
  if (!ProbeWorthwhile(e, max_k)) return 0;
  probes_left_ = 1;
  return BestDraftTokens(e, 1, max_k, options_.pipelined);
}

bool DraftCostModel::KeepGuessing(const DraftCostEstimates& e, int32_t max_k, double rate,
                                  double alone) const {
  if (rounds_with_guesses_ < options_.evidence_rounds && !e.acceptance.empty() &&
      e.acceptance[0] >= 0.5 && GuessingCanPay(e, max_k, options_.pipelined)) {
    return true;
  }
  return speculating_ && (1 + options_.alone_margin) * rate >= alone;
}

bool DraftCostModel::ProbeWorthwhile(const DraftCostEstimates& e, int32_t max_k) {
  // Acceptance may have changed since the last guesses: re-measure it (and, while probes keep
  // finding k = 0 best, less and less often). But when even a draft whose every guess were
  // kept would be slower than the target alone (a draft as costly per token as the target),
  // a probe can only lose time: remote, where the draft's host or the network may change,
  // only the longest interval's probe runs.
  const int32_t longest = 8 * options_.probe_after_rounds;
  if (options_.compute_only) {
    // In-process both halves share a thread, so their costs move together; and a probe first
    // catches the draft up on every token since the last one, which costs the same share of
    // that time however far apart probes are: up to d / t0 (a draft step a token; prefill is
    // cheaper). So a probe runs only when all guesses kept would gain more than that share,
    // and once after guesses stopped paying, none after it found them still not paying.
    const double catch_up = e.draft_token_seconds * AloneTokensPerSecond(e);
    if (probes_in_vain_ > 0 || !GuessingCanPay(e, max_k, options_.pipelined, catch_up)) {
      return false;
    }
    ++probes_in_vain_;
    return true;
  }
  if (probe_interval_ < longest && !GuessingCanPay(e, max_k, options_.pipelined)) {
    probe_interval_ = longest;
    return false;
  }
  probe_interval_ = std::min(2 * probe_interval_, longest);
  return true;
}

void DraftCostModel::FitVerify(DraftCostEstimates& e) const {
  // Weighted least squares of the per-row-count means against r.
  double w = 0, wr = 0, wv = 0, wrr = 0, wrv = 0;
  int bins = 0;
  for (size_t i = 0; i < verify_by_rows_.size(); ++i) {
    const Mean& m = verify_by_rows_[i];
    if (!m.known()) continue;
    const double r = static_cast<double>(i + 1), v = m.value();
    w += m.weight, wr += m.weight * r, wv += m.weight * v;
    wrr += m.weight * r * r, wrv += m.weight * r * v;
    ++bins;
  }
  if (bins == 0) return;
  const double mean_r = wr / w, mean_v = wv / w;
  if (bins == 1) {
    // One row count seen: assume v(r) grows as r + 3 (a small model's batch of 5 costs
    // about twice one row; a large model's much less), until a second one is seen.
    e.verify_row_seconds = mean_v / (mean_r + 3);
    e.verify_base_seconds = 3 * e.verify_row_seconds;
    return;
  }
  const double slope = (wrv - w * mean_r * mean_v) / (wrr - w * mean_r * mean_r);
  e.verify_row_seconds = std::max(0.0, slope);
  e.verify_base_seconds = std::max(0.0, mean_v - e.verify_row_seconds * mean_r);
}

DraftCostEstimates DraftCostModel::Estimates() const {
  DraftCostEstimates e;
  for (const Mean& a : acceptance_) {
    if (!a.known()) break;
    e.acceptance.push_back(a.value());
  }
  if (e.acceptance.empty()) e.acceptance.push_back(options_.prior_acceptance);
  e.draft_token_seconds = draft_token_.value();
  e.draft_overhead_seconds = draft_overhead_.value();
  e.verify_overhead_seconds = verify_overhead_.value();
  e.alone_token_seconds = alone_token_.value();
  e.round_overhead_seconds = round_overhead_.value();
  FitVerify(e);
  e.chosen_k = k_;
  e.predicted_tokens_per_second = TokensPerSecond(e, k_, options_.pipelined);
  e.predicted_alone_tokens_per_second = AloneTokensPerSecond(e);
  return e;
}

}  // namespace tandem
