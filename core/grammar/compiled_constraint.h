// A constraint compiled for one vocabulary: the grammar (from JSON Schema, json_object, GBNF or
// a regex) plus what makes token masks fast for this vocabulary (a trie of the tokens' bytes,
// the masks cached per matcher state). Immutable once built and shared by every request that
// asks for the same constraint (ConstraintCache, keyed by content); each request gets its own
// TokenConstraint from NewTokenConstraint.
//
//   auto vocab = std::make_shared<const ConstraintVocabulary>(
//       ConstraintVocabulary::FromTokenizer(tokenizer, stop_ids));
//   ConstraintCache cache(/*max_entries=*/64);
//   ASSIGN_OR_RETURN(auto compiled, cache.Get(spec, vocab));
//   std::unique_ptr<TokenConstraint> constraint = NewTokenConstraint(compiled);
#ifndef TANDEM_CORE_GRAMMAR_COMPILED_CONSTRAINT_H_
#define TANDEM_CORE_GRAMMAR_COMPILED_CONSTRAINT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/grammar/constraint_spec.h"
#include "core/grammar/token_constraint.h"
#include "core/tokenizer/vocabulary.h"

namespace tandem {

class Tokenizer;
class TokenTrie;
struct Grammar;

// The vocabulary as the matcher sees it: each token's bytes, and which tokens end the output.
struct ConstraintVocabulary {
  // Per id, the bytes a grammar matches for the token (ConstraintBytesOf): its text bytes, a
  // control token's SpecialTokenBytes (special_token.h), or empty for tokens a constraint
  // never allows (end ids, unknown and unused tokens, tokens holding byte 0xFF).
  std::vector<std::string> token_bytes;
  // Tokens allowed exactly where the constraint may end (EOS and end-of-turn: the request's
  // stop tokens), whatever their bytes.
  std::vector<int32_t> end_ids;
  // A digest of the above, part of ConstraintCache's key.
  std::string fingerprint;
  // The tokens' bytes as a trie (token_trie.h), built once per vocabulary.
  std::shared_ptr<const TokenTrie> trie;

  // ConstraintTokenBytes(tokenizer) with `end_ids`. End ids outside the vocabulary are dropped.
  static ConstraintVocabulary FromTokenizer(const Tokenizer& tokenizer,
                                            absl::Span<const int32_t> end_ids);
  // From explicit bytes (tests, benchmarks).
  static ConstraintVocabulary FromBytes(std::vector<std::string> token_bytes,
                                        std::vector<int32_t> end_ids);
};

// The bytes a grammar matches for a token of `type` whose text is `bytes` (Tokenizer::TokenBytes):
//  - normal, byte and user-defined tokens: `bytes`, or nothing if they hold byte 0xFF (no
//    UTF-8 output contains it, and it marks control tokens);
//  - control tokens: SpecialTokenBytes(bytes) (special_token.h), which a grammar allows only
//    where it names the token with SpecialTokenLiteral; nothing for an empty text;
//  - unknown, unused and undefined tokens: nothing (never allowed).
// The end ids' bytes are cleared when the vocabulary is built (they end the output instead).
std::string ConstraintBytesOf(TokenType type, absl::string_view bytes);
// A tokenizer's token bytes as a constraint sees them: ConstraintBytesOf for every token.
std::vector<std::string> ConstraintTokenBytes(const Tokenizer& tokenizer);

class CompiledConstraint;

// kInvalidArgument naming the culprit for a bad schema, grammar or regex, or one past a limit.
absl::StatusOr<std::shared_ptr<const CompiledConstraint>> CompileConstraint(
    const ConstraintSpec& spec, std::shared_ptr<const ConstraintVocabulary> vocabulary);

// The same for a grammar already built (tests, benchmarks, tool-call grammars).
absl::StatusOr<std::shared_ptr<const CompiledConstraint>> CompileGrammarConstraint(
    Grammar grammar, std::shared_ptr<const ConstraintVocabulary> vocabulary);

// A fresh state (nothing generated yet) for one request.
std::unique_ptr<TokenConstraint> NewTokenConstraint(
    std::shared_ptr<const CompiledConstraint> compiled);

// Compiled constraints by (spec, vocabulary fingerprint), the least recently used dropped past
// `max_entries`. Thread-safe. A failed compile is not cached.
class ConstraintCache {
 public:
  explicit ConstraintCache(size_t max_entries);
  ~ConstraintCache();
  absl::StatusOr<std::shared_ptr<const CompiledConstraint>> Get(
      const ConstraintSpec& spec, std::shared_ptr<const ConstraintVocabulary> vocabulary);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_GRAMMAR_COMPILED_CONSTRAINT_H_
