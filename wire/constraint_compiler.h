// Requests' output constraints (ConstraintSpec) compiled for one vocabulary, as the workers
// (over their own tokenizer) and the coordinator (over the target's token bytes, for its
// forced tokens and to refuse a bad constraint before any worker call) both need them:
//
//   ConstraintCompiler compiler(ConstraintCompiler::TokenBytes(tokenizer));
//   ASSIGN_OR_RETURN(std::unique_ptr<TokenConstraint> c, compiler.New(spec, stop_ids));
//
// A process keeps one compiler. Compiled constraints are cached by content (ConstraintCache,
// `max_constraints` of them), so a schema many requests share compiles once; the vocabulary
// a constraint is compiled over (its token bytes, its end ids, the trie) is built once per
// set of end ids and kept for the `max_vocabularies` most recently used sets (requests of one
// model nearly all share the model's end-of-turn ids).
//
// The token bytes are those ConstraintVocabulary::FromTokenizer gives (ConstraintBytesOf): a
// tokenizer's normal, byte and user-defined tokens' bytes, a control token's text between
// 0xFF marks (special_token.h), empty for the others (unknown, unused), so the coordinator's
// copy (TokenBytes(v1::Vocabulary)) equals a worker's of the same model as long as the
// vocabulary it got carries the control tokens' texts.
//
// Thread-safe.
#ifndef TANDEM_WIRE_CONSTRAINT_COMPILER_H_
#define TANDEM_WIRE_CONSTRAINT_COMPILER_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "core/grammar/compiled_constraint.h"
#include "core/grammar/constraint_spec.h"
#include "core/grammar/token_constraint.h"
#include "tandem/v1/worker.pb.h"

namespace tandem {

class Tokenizer;

struct ConstraintCompilerOptions {
  // Compiled constraints kept (ConstraintCache). Each holds up to ~16 MiB of token sets and
  // 256 masks (4 MiB at 128k tokens) once used: the bound keeps a process's share bounded.
  size_t max_constraints = 16;
  size_t max_vocabularies = 8;  // sets of end ids whose vocabulary is kept
};

class ConstraintCompiler {
 public:
  // `token_bytes`: by id, the bytes a constraint may match; empty for a token never allowed.
  explicit ConstraintCompiler(std::vector<std::string> token_bytes,
                              const ConstraintCompilerOptions& options = {});

  // A tokenizer's bytes as ConstraintVocabulary::FromTokenizer takes them.
  static std::vector<std::string> TokenBytes(const Tokenizer& tokenizer);
  // The same from a worker's Describe (token_bytes and token_types).
  static std::vector<std::string> TokenBytes(const v1::Vocabulary& vocabulary);
  // The same from a whole Describe: with the tokenizer (include_tokenizer), control tokens
  // have their text, as a worker's constraint sees them (a grammar may name one: a family's
  // tool-call marker); without it, they are never allowed.
  static std::vector<std::string> TokenBytes(const v1::DescribeResponse& describe);

  // A fresh state of `spec` (not kNone) whose end tokens are `end_ids` (ids outside the
  // vocabulary are dropped). kInvalidArgument naming the culprit for a constraint that does
  // not compile or is past a limit; the compiler's other codes as they come.
  absl::StatusOr<std::unique_ptr<TokenConstraint>> New(const ConstraintSpec& spec,
                                                       absl::Span<const int32_t> end_ids);

  int64_t vocab_size() const { return static_cast<int64_t>(token_bytes_.size()); }

 private:
  struct Vocabulary {
    std::vector<int32_t> end_ids;  // sorted, unique
    std::shared_ptr<const ConstraintVocabulary> vocabulary;
  };
  // The vocabulary for `end_ids`, built on first use.
  std::shared_ptr<const ConstraintVocabulary> VocabularyFor(absl::Span<const int32_t> end_ids);

  const std::vector<std::string> token_bytes_;
  const size_t max_vocabularies_;
  ConstraintCache cache_;
  absl::Mutex mutex_;
  std::list<Vocabulary> vocabularies_ ABSL_GUARDED_BY(mutex_);  // most recently used first
};

}  // namespace tandem

#endif  // TANDEM_WIRE_CONSTRAINT_COMPILER_H_
