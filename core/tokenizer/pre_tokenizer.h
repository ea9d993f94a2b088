// Splits text into the pieces a byte-level BPE merges independently, with the regexes of a
// pre-tokenizer family (GGUF `tokenizer.ggml.pre`) or explicit ones (tokenizer.json `Split`).
//
// Several regexes apply in turn, llama.cpp-style: each splits every piece of the previous step
// into its matches and the gaps between them (both kept), and a match never looks past its
// piece. Regexes are PCRE2 in UTF + UCP mode (Unicode \p{..} classes and \s), JIT-compiled.
//
// A PreTokenizer is immutable; Split is thread-safe.
#ifndef TANDEM_CORE_TOKENIZER_PRE_TOKENIZER_H_
#define TANDEM_CORE_TOKENIZER_PRE_TOKENIZER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem {

class PreTokenizer {
 public:
  // The regexes of a family: "gpt-2" (also "default", "gpt-neox", "mpt", "olmo", "phi-2",
  // "roberta-bpe", "jais"), "llama-bpe" ("llama3", "llama-v3", "falcon3", "dbrx",
  // "smaug-bpe"), "qwen2" ("qwen2.5", "deepseek-r1-qwen", "stablelm2", "megrez"),
  // "starcoder" ("refact", "smollm", "command-r", "codeshell", "exaone", "minerva-7b"),
  // "falcon", "deepseek-llm", "deepseek-coder", "poro-chat" ("bloom", "gpt3-finnish").
  // kUnimplemented naming any other family.
  static absl::StatusOr<std::vector<std::string>> FamilyRegexes(absl::string_view family);

  // Whether the family's tokenizer takes a piece that is a whole token without merging
  // (Hugging Face's ignore_merges, set by Llama 3).
  static bool FamilyIgnoresMerges(absl::string_view family);

  // kInvalidArgument naming the regex and the PCRE2 error if one does not compile.
  static absl::StatusOr<PreTokenizer> Create(const std::vector<std::string>& regexes);

  // Appends the pieces of `text` (valid UTF-8), in order, to `pieces`; together they cover
  // `text` exactly. If `kinds` is given, it gets one entry per piece: the index of the last
  // regex that matched it, or -1 for a piece no regex matched. kResourceExhausted if PCRE2
  // hits its match or stack limits.
  absl::Status Split(absl::string_view text, std::vector<absl::string_view>* pieces,
                     std::vector<int>* kinds = nullptr) const;

 private:
  struct Compiled;
  explicit PreTokenizer(std::shared_ptr<const Compiled> compiled)
      : compiled_(std::move(compiled)) {}

  std::shared_ptr<const Compiled> compiled_;
};

}  // namespace tandem

#endif  // TANDEM_CORE_TOKENIZER_PRE_TOKENIZER_H_
