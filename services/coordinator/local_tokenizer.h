// The coordinator's own copy of its target's tokenizer, so that a text or chat prompt becomes
// ids without a Tokenize round trip to the target before the first token.
//
// Source: the target worker ships it, once per coordinator start, in a Describe with
// include_tokenizer (the whole Vocabulary and the chat template, tokenizer_wire.h). Chosen over
// a coordinator --tokenizer flag because it is honest by construction: it is the very data the
// worker tokenizes with (a file path on the coordinator's host could name another export, or
// drift from the worker's --model after a redeploy), it needs no configuration, and it is
// cheap (one message of a few MB at start-up; probes carry only the fingerprint). The ids come
// from the same code as the worker's Tokenize (prompt_tokenization.h), so they are equal.
//
// Trust: the copy is used only when TokenizerFingerprint of what arrived equals the
// fingerprint the worker reports for its own tokenizer (ModelInfo.tokenizer_fingerprint);
// otherwise Create fails and the coordinator asks the worker (coordinator.h). Replicas are
// compared with the same fingerprint by the target pool's probes (WorkerPool::WatchTokenizer).
//
// Immutable and thread-safe.
#ifndef TANDEM_SERVICES_COORDINATOR_LOCAL_TOKENIZER_H_
#define TANDEM_SERVICES_COORDINATOR_LOCAL_TOKENIZER_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/tokenizer/tokenizer.h"
#include "tandem/v1/generator.pb.h"
#include "tandem/v1/worker.pb.h"

namespace tandem {

class LocalTokenizer {
 public:
  // From a target's Describe(include_tokenizer). kFailedPrecondition when the worker sent no
  // tokenizer or no fingerprint (it predates them), or when the fingerprint of what arrived
  // differs from the worker's; the data's and Tokenizer::Create's errors as is.
  static absl::StatusOr<LocalTokenizer> Create(const v1::DescribeResponse& target);

  // As the worker's Tokenize answers `request`.
  absl::StatusOr<v1::TokenizeResponse> Tokenize(const v1::TokenizeRequest& request) const;

  // The worker's ModelInfo.tokenizer_fingerprint, which this copy matches.
  const std::string& fingerprint() const { return fingerprint_; }

 private:
  LocalTokenizer(Tokenizer tokenizer, std::optional<std::string> chat_template,
                 std::string fingerprint)
      : tokenizer_(std::move(tokenizer)),
        chat_template_(std::move(chat_template)),
        fingerprint_(std::move(fingerprint)) {}

  Tokenizer tokenizer_;
  std::optional<std::string> chat_template_;
  std::string fingerprint_;
};

}  // namespace tandem

#endif  // TANDEM_SERVICES_COORDINATOR_LOCAL_TOKENIZER_H_
