#include "core/generation/output_constraint.h"

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"

namespace tandem {
namespace {

// sequence[start, end): the output so far, or kInvalidArgument if the sequence ends before
// the output begins.
absl::StatusOr<absl::Span<const int32_t>> OutputOf(const OutputConstraint& constrained,
                                                   absl::Span<const int32_t> sequence) {
  const int64_t length = static_cast<int64_t>(sequence.size());
  if (constrained.start < 0 || constrained.start > length) {
    return absl::InvalidArgumentError(absl::StrCat("the constrained output starts at position ",
                                                   constrained.start, ", outside the ", length,
                                                   " tokens of the sequence"));
  }
  return sequence.subspan(constrained.start);
}

}  // namespace

absl::Status DeadEndError(const OutputConstraint& constrained, int64_t position) {
  return absl::InvalidArgumentError(absl::StrCat(
      "the constraint allows no token after ", position - constrained.start, " generated tokens"));
}

absl::Status MaskAt(const OutputConstraint& constrained, absl::Span<const int32_t> sequence,
                    TokenMask* mask) {
  ASSIGN_OR_RETURN(absl::Span<const int32_t> output, OutputOf(constrained, sequence));
  RETURN_IF_ERROR(constrained.constraint->Sync(output));
  constrained.constraint->FillMask(mask);
  for (uint64_t word : mask->words) {
    if (word != 0) return absl::OkStatus();
  }
  return DeadEndError(constrained, static_cast<int64_t>(sequence.size()));
}

int32_t OnlyAllowedToken(const TokenMask& mask) {
  int32_t only = -1;
  for (size_t i = 0; i < mask.words.size(); ++i) {
    const uint64_t word = mask.words[i];
    if (word == 0) continue;
    if (only >= 0 || (word & (word - 1)) != 0) return -1;  // a second token
    only = static_cast<int32_t>(i * 64 + __builtin_ctzll(word));
  }
  return only;
}

int64_t AcceptedGuesses(const OutputConstraint& constrained, absl::Span<const int32_t> sequence,
                        absl::Span<const int32_t> guesses, std::vector<int32_t>* walked) {
  if (!constrained.active()) return static_cast<int64_t>(guesses.size());
  absl::StatusOr<absl::Span<const int32_t>> output = OutputOf(constrained, sequence);
  if (!output.ok()) return 0;
  walked->assign(output->begin(), output->end());
  // One token more per call: Sync keeps what it holds and accepts only the new token.
  for (size_t i = 0; i < guesses.size(); ++i) {
    walked->push_back(guesses[i]);
    if (!constrained.constraint->Sync(*walked).ok()) return static_cast<int64_t>(i);
  }
  return static_cast<int64_t>(guesses.size());
}

}  // namespace tandem
