// A client's predicted output (OpenAI's Predicted Outputs: the file being edited, the document
// being revised) as a drafter: its guesses continue the prediction from where the output is
// aligned with it. Each guess is offered with a one-hot q, so the acceptance rule keeps the
// output exactly the target's (greedy output never changes; Gumbel-coupled output neither).
//
// Alignment follows the output token by token. `next` is the prediction's index expected next:
//   - the output's token equals prediction[next]: next + 1;
//   - otherwise (an edit), the first of
//       1. the token found near `next` (prediction[next + d] for d = 1, -1, 2, -2, ... up to
//          `window`): the prediction had d extra tokens there (or lacked |d|): after it;
//       2. when the token before was a substitution too (rule 3 did not explain the edit): the
//          longest suffix of the output (at least min_match tokens, at most max_match) that
//          occurs in the prediction, the occurrence nearest after `next` (or after where the
//          output was last aligned) first: after it (an
//          edit longer than the window, or an output that left the prediction and came back);
//       3. a substitution: next + 1 (the output replaced prediction[next]);
//     unless more than `window` tokens in a row were not the expected ones: that is another
//     text, and the output is lost (only 2 can align it again);
//     and when the output was not aligned (nothing expected), only 2. In repetitive text the
//     same few tokens recur far away: a far jump waits until a nearby explanation failed.
// So a token replaced, inserted or deleted in the middle costs one round's rest, not the rest
// of the prediction. Guesses right after a substitution are few (after_edit), and inside a run
// of edits there are none until the output matches the prediction again. Past the prediction's end nothing is expected until 2 finds a match.
//
// Thread-safety: one per request, on the round driver's thread.
#ifndef TANDEM_CORE_GENERATION_PREDICTION_DRAFTER_H_
#define TANDEM_CORE_GENERATION_PREDICTION_DRAFTER_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace tandem {

struct PredictionOptions {
  int32_t window = 8;     // how far from the expected index an edited output's token is sought
  // Right after an edit the alignment is a guess of its own: after a token that was not the
  // expected one, and until two in a row were, at most this many guesses; none after three
  // misses in a row, or two when the second was taken for a substitution with no evidence
  // (the output is inside an edit; the draft guesses there).
  int32_t after_edit = 4;
  int32_t min_match = 3;  // the shortest suffix match that re-aligns a lost output
  int32_t max_match = 32;
};

class PredictionDrafter {
 public:
  // `prediction`: the predicted output's token ids; the output begins at `output_start` in
  // the sequences Guesses is given.
  PredictionDrafter(std::vector<int32_t> prediction, int64_t output_start,
                    const PredictionOptions& options = PredictionOptions());

  // Up to k tokens of the prediction expected after `sequence` into `out` (cleared first);
  // none where the output is not aligned with it. A sequence that shares only a prefix with
  // the last one given (the caller cut tokens) re-aligns from the output's start.
  void Guesses(absl::Span<const int32_t> sequence, int32_t k, std::vector<int32_t>* out);

  // The prediction's index expected after the last sequence given, or -1 (for tests).
  int64_t expected() const { return next_; }
  int64_t size() const { return static_cast<int64_t>(prediction_.size()); }

 private:
  // Advances the alignment over output token `i` of `output`.
  void Step(absl::Span<const int32_t> output, int64_t i);
  // Rule 1: the index after `token` near next_, or -1.
  int64_t NearbyIndex(int32_t token) const;
  // Rule 2: the index after the longest suffix of output[0, end) found in the prediction, or -1.
  int64_t SuffixMatchIndex(absl::Span<const int32_t> output, int64_t end) const;

  std::vector<int32_t> prediction_;
  int64_t output_start_;
  PredictionOptions options_;
  struct State {
    int64_t next = 0;    // the prediction's index expected next, or -1
    int64_t anchor = 0;  // the last such index (where a lost output was last aligned)
    int32_t misses = 0;   // tokens in a row that were not the one expected
    int32_t matched = 0;  // tokens in a row that were (kConfirmed at the start)
    bool blind = false;   // the last token was taken for a substitution, with no evidence
  };
  // Matches in a row after an edit before guesses are no longer capped at after_edit.
  static constexpr int32_t kConfirmed = 2;
  std::vector<int32_t> seen_;      // the output tokens aligned so far
  std::vector<State> states_;      // the state after each of them
  int64_t next_ = 0;               // the current State
  int64_t anchor_ = 0;
  int32_t misses_ = 0;
  int32_t matched_ = kConfirmed;
  bool blind_ = false;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GENERATION_PREDICTION_DRAFTER_H_
