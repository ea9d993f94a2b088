#include "wire/constraint_compiler.h"

#include <algorithm>
#include <utility>

#include "core/base/status_macros.h"
#include "core/tokenizer/tokenizer.h"

namespace tandem {

ConstraintCompiler::ConstraintCompiler(std::vector<std::string> token_bytes,
                                       const ConstraintCompilerOptions& options)
    : token_bytes_(std::move(token_bytes)),
      max_vocabularies_(std::max<size_t>(options.max_vocabularies, 1)),
      cache_(options.max_constraints) {}

std::vector<std::string> ConstraintCompiler::TokenBytes(const Tokenizer& tokenizer) {
  return ConstraintTokenBytes(tokenizer);
}

std::vector<std::string> ConstraintCompiler::TokenBytes(const v1::Vocabulary& vocabulary) {
  std::vector<std::string> bytes(vocabulary.token_bytes().begin(), vocabulary.token_bytes().end());
  // A worker sends one type per token; without them every token's bytes count.
  if (vocabulary.token_types_size() == vocabulary.token_bytes_size()) {
    for (size_t id = 0; id < bytes.size(); ++id) {
      const auto type = static_cast<TokenType>(vocabulary.token_types(static_cast<int>(id)));
      bytes[id] = ConstraintBytesOf(type, bytes[id]);
    }
  }
  return bytes;
}

std::vector<std::string> ConstraintCompiler::TokenBytes(const v1::DescribeResponse& describe) {
  v1::Vocabulary vocabulary = describe.vocabulary();
  const v1::TokenizerData& tokenizer = describe.tokenizer();
  const int n = std::min({vocabulary.token_bytes_size(), vocabulary.token_types_size(),
                          tokenizer.tokens_size()});
  for (int id = 0; id < n; ++id) {
    if (vocabulary.token_types(id) == static_cast<int>(TokenType::kControl)) {
      vocabulary.set_token_bytes(id, tokenizer.tokens(id));
    }
  }
  return TokenBytes(vocabulary);
}

std::shared_ptr<const ConstraintVocabulary> ConstraintCompiler::VocabularyFor(
    absl::Span<const int32_t> end_ids) {
  std::vector<int32_t> ids;
  for (int32_t id : end_ids) {
    if (id >= 0 && id < vocab_size()) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  {
    absl::MutexLock lock(&mutex_);
    for (auto it = vocabularies_.begin(); it != vocabularies_.end(); ++it) {
      if (it->end_ids == ids) {
        vocabularies_.splice(vocabularies_.begin(), vocabularies_, it);
        return it->vocabulary;
      }
    }
  }
  // Built outside the lock (a pass over the vocabulary and its trie): two requests with a new
  // set of end ids may build it once each.
  auto vocabulary = std::make_shared<const ConstraintVocabulary>(
      ConstraintVocabulary::FromBytes(token_bytes_, ids));
  absl::MutexLock lock(&mutex_);
  vocabularies_.push_front({std::move(ids), vocabulary});
  if (vocabularies_.size() > max_vocabularies_) vocabularies_.pop_back();
  return vocabulary;
}

absl::StatusOr<std::unique_ptr<TokenConstraint>> ConstraintCompiler::New(
    const ConstraintSpec& spec, absl::Span<const int32_t> end_ids) {
  if (spec.empty()) return absl::InvalidArgumentError("no constraint to compile");
  ASSIGN_OR_RETURN(std::shared_ptr<const CompiledConstraint> compiled,
                   cache_.Get(spec, VocabularyFor(end_ids)));
  return NewTokenConstraint(std::move(compiled));
}

}  // namespace tandem
