#include "core/grammar/compiled_constraint.h"

#include <algorithm>
#include <list>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "core/base/status_macros.h"
#include "core/grammar/constraint_grammar.h"
#include "core/grammar/grammar_constraint.h"
#include "core/grammar/position_token_sets.h"
#include "core/grammar/special_token.h"
#include "core/grammar/token_trie.h"
#include "core/tokenizer/fnv1a64.h"
#include "core/tokenizer/tokenizer.h"

namespace tandem {

class CompiledConstraint {
 public:
  // How long compiling may spend on the token sets of every grammar position up front.
  static constexpr double kComputeAllSeconds = 0.25;

  CompiledConstraint(Grammar grammar, std::shared_ptr<const ConstraintVocabulary> vocabulary)
      : grammar_(std::move(grammar)),
        vocabulary_(std::move(vocabulary)),
        positions_(grammar_, *vocabulary_->trie, vocabulary_->token_bytes) {
    positions_.ComputeAll(kComputeAllSeconds);
  }

  // The grammar's shared matcher; a fresh one once the current one has grown past its node
  // bound (requests that hold the old one keep it until they end).
  std::shared_ptr<SharedMatcher> AcquireMatcher() const {
    absl::MutexLock lock(&mutex_);
    if (shared_ != nullptr) {
      absl::MutexLock matcher_lock(&shared_->mutex);
      if (shared_->matcher.node_count() <= SharedMatcher::kMaxNodes) return shared_;
    }
    shared_ = std::make_shared<SharedMatcher>(grammar_);
    return shared_;
  }

  GrammarTables tables() const {
    GrammarTables t;
    t.grammar = &grammar_;
    t.token_bytes = &vocabulary_->token_bytes;
    t.end_ids = &vocabulary_->end_ids;
    t.trie = vocabulary_->trie.get();
    t.positions = &positions_;
    return t;
  }

 private:
  Grammar grammar_;
  std::shared_ptr<const ConstraintVocabulary> vocabulary_;
  mutable PositionTokenSets positions_;
  mutable absl::Mutex mutex_;
  mutable std::shared_ptr<SharedMatcher> shared_ ABSL_GUARDED_BY(mutex_);
};

namespace {

ConstraintVocabulary Finish(std::vector<std::string> token_bytes, std::vector<int32_t> end_ids) {
  ConstraintVocabulary v;
  const int32_t vocab = static_cast<int32_t>(token_bytes.size());
  for (int32_t id : end_ids) {
    if (id < 0 || id >= vocab) continue;
    if (std::find(v.end_ids.begin(), v.end_ids.end(), id) == v.end_ids.end()) {
      v.end_ids.push_back(id);
    }
    token_bytes[id].clear();  // an end token is never text
  }
  Fnv1a64 digest;
  for (const std::string& bytes : token_bytes) digest.AddField(bytes);
  for (int32_t id : v.end_ids) digest.AddInt(id);
  v.fingerprint = absl::StrFormat("%016x", digest.hash());
  v.trie = std::make_shared<const TokenTrie>(token_bytes);
  v.token_bytes = std::move(token_bytes);
  return v;
}

}  // namespace

std::string ConstraintBytesOf(TokenType type, absl::string_view bytes) {
  switch (type) {
    case TokenType::kNormal:
    case TokenType::kByte:
    case TokenType::kUserDefined:
      if (bytes.find(kSpecialTokenMark) != absl::string_view::npos) return std::string();
      return std::string(bytes);
    case TokenType::kControl:
      return SpecialTokenBytes(bytes);
    case TokenType::kUndefined:
    case TokenType::kUnknown:
    case TokenType::kUnused:
      break;
  }
  return std::string();
}

std::vector<std::string> ConstraintTokenBytes(const Tokenizer& tokenizer) {
  const Vocabulary& vocab = tokenizer.vocabulary();
  std::vector<std::string> bytes(vocab.tokens.size());
  for (size_t id = 0; id < bytes.size(); ++id) {
    absl::StatusOr<absl::string_view> b = tokenizer.TokenBytes(static_cast<int32_t>(id));
    if (b.ok()) bytes[id] = ConstraintBytesOf(vocab.types[id], *b);
  }
  return bytes;
}

ConstraintVocabulary ConstraintVocabulary::FromTokenizer(const Tokenizer& tokenizer,
                                                         absl::Span<const int32_t> end_ids) {
  return Finish(ConstraintTokenBytes(tokenizer),
                std::vector<int32_t>(end_ids.begin(), end_ids.end()));
}

ConstraintVocabulary ConstraintVocabulary::FromBytes(std::vector<std::string> token_bytes,
                                                     std::vector<int32_t> end_ids) {
  return Finish(std::move(token_bytes), std::move(end_ids));
}

absl::StatusOr<std::shared_ptr<const CompiledConstraint>> CompileGrammarConstraint(
    Grammar grammar, std::shared_ptr<const ConstraintVocabulary> vocabulary) {
  if (vocabulary == nullptr || vocabulary->trie == nullptr) {
    return absl::InvalidArgumentError("no vocabulary to compile the constraint for");
  }
  return std::make_shared<const CompiledConstraint>(std::move(grammar), std::move(vocabulary));
}

absl::StatusOr<std::shared_ptr<const CompiledConstraint>> CompileConstraint(
    const ConstraintSpec& spec, std::shared_ptr<const ConstraintVocabulary> vocabulary) {
  ASSIGN_OR_RETURN(Grammar grammar, GrammarForSpec(spec));
  return CompileGrammarConstraint(std::move(grammar), std::move(vocabulary));
}

std::unique_ptr<TokenConstraint> NewTokenConstraint(
    std::shared_ptr<const CompiledConstraint> compiled) {
  const GrammarTables tables = compiled->tables();
  std::shared_ptr<SharedMatcher> shared = compiled->AcquireMatcher();
  return std::make_unique<GrammarConstraint>(std::move(compiled), tables, std::move(shared));
}

struct ConstraintCache::Impl {
  struct Entry {
    std::string key;
    std::shared_ptr<const CompiledConstraint> compiled;
  };
  size_t max_entries;
  absl::Mutex mutex;
  std::list<Entry> entries;  // most recently used first
};

ConstraintCache::ConstraintCache(size_t max_entries) : impl_(std::make_unique<Impl>()) {
  impl_->max_entries = std::max<size_t>(max_entries, 1);
}

ConstraintCache::~ConstraintCache() = default;

absl::StatusOr<std::shared_ptr<const CompiledConstraint>> ConstraintCache::Get(
    const ConstraintSpec& spec, std::shared_ptr<const ConstraintVocabulary> vocabulary) {
  if (vocabulary == nullptr) return absl::InvalidArgumentError("no vocabulary");
  const std::string key =
      absl::StrCat(ConstraintKindName(spec.kind), "\n", ReasoningPrefixName(spec.reasoning), "\n",
                   vocabulary->fingerprint, "\n", spec.text);
  {
    absl::MutexLock lock(&impl_->mutex);
    for (auto it = impl_->entries.begin(); it != impl_->entries.end(); ++it) {
      if (it->key == key) {
        impl_->entries.splice(impl_->entries.begin(), impl_->entries, it);
        return it->compiled;
      }
    }
  }
  // Compiled outside the lock: two requests may compile the same spec once each.
  ASSIGN_OR_RETURN(auto compiled, CompileConstraint(spec, std::move(vocabulary)));
  absl::MutexLock lock(&impl_->mutex);
  impl_->entries.push_front({key, compiled});
  if (impl_->entries.size() > impl_->max_entries) impl_->entries.pop_back();
  return compiled;
}

}  // namespace tandem
