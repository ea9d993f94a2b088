#include "services/coordinator/local_tokenizer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "core/tokenizer/tokenizer_fingerprint.h"
#include "wire/prompt_tokenization.h"
#include "wire/tokenizer_wire.h"

namespace tandem {

absl::StatusOr<LocalTokenizer> LocalTokenizer::Create(const v1::DescribeResponse& target) {
  const std::string& claimed = target.model().tokenizer_fingerprint();
  if (!target.has_tokenizer() || claimed.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("target '", target.model().name(), "' sent no tokenizer"));
  }
  ASSIGN_OR_RETURN(Vocabulary vocab, VocabularyFromProto(target.tokenizer()));
  std::optional<std::string> chat_template = ChatTemplateFromProto(target.tokenizer());
  const std::string received = TokenizerFingerprint(vocab, chat_template);
  if (received != claimed) {
    return absl::FailedPreconditionError(
        absl::StrCat("the tokenizer target '", target.model().name(), "' sent has fingerprint ",
                     received, ", not its own ", claimed));
  }
  ASSIGN_OR_RETURN(Tokenizer tokenizer, Tokenizer::Create(std::move(vocab)));
  return LocalTokenizer(std::move(tokenizer), std::move(chat_template), claimed);
}

absl::StatusOr<v1::TokenizeResponse> LocalTokenizer::Tokenize(
    const v1::TokenizeRequest& request) const {
  return TokenizePrompt(tokenizer_, chat_template_, request);
}

}  // namespace tandem
